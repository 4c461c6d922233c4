// mma_store.cuh: the epilogue of the tensor-core products (mmh.cu, mmhq.cu,
// mmq.cu): a warp's accumulator tiles, in the C fragment layout of
// mma.sync m16n8 (the same for m16n8k16 and m16n8k32: with g = lane/4 and
// t = lane%4, register e of tile (mi, ni) is row 16mi + g + 8(e/2), column
// 8ni + 2t + e%2), written to Y or added to it.
#pragma once

#include <stddef.h>

// mma_store writes the MT × NT tiles acc of a warp whose first weight row is
// r0 and first batch row b0 to y (batch rows of rows values; weight row r of
// batch row b at y[b·rows + r]), or, with accumulate, adds them to it
// (y + v, as a single add); values past rows or batch are dropped. With
// accumulate the values of a row of tiles (one mi) are all read before any
// is written, so those reads go out together instead of each waiting
// behind the store before it (y may alias what the compiler sees of the
// other values); a row of tiles at a time, as all of them at once spills.
template <int MT, int NT>
static __device__ __forceinline__ void mma_store(float *y, int rows, int batch, bool accumulate, int r0, int b0,
                                                 int lane, float (&acc)[MT][NT][4]) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int mi = 0; mi < MT; mi++) {
    if (accumulate) {
#pragma unroll
      for (int ni = 0; ni < NT; ni++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
          const int r = r0 + mi * 16 + g + (e >> 1) * 8, b = b0 + ni * 8 + 2 * t + (e & 1);
          if (r < rows && b < batch) acc[mi][ni][e] = y[(size_t)b * rows + r] + acc[mi][ni][e];
        }
    }
#pragma unroll
    for (int ni = 0; ni < NT; ni++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const int r = r0 + mi * 16 + g + (e >> 1) * 8, b = b0 + ni * 8 + 2 * t + (e & 1);
        if (r < rows && b < batch) y[(size_t)b * rows + r] = acc[mi][ni][e];
      }
  }
}
