// reduce.cuh: block-wide sums in a fixed order, so that every kernel that
// sums the same values the same way gets the same bits.
#pragma once

// block_sum is the sum of v over the first WARPS warps of the block: each
// warp's lanes in butterfly order, then the warps in order. Every thread
// of the block calls it (the warps past WARPS take part in the barriers
// and their sums are ignored) and gets the sum. red is at least
// blockDim.x/32 floats of shared memory.
template <int WARPS>
static __device__ __forceinline__ float block_sum(float v, float *red) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  float s = 0.f;
#pragma unroll
  for (int w = 0; w < WARPS; w++) s += red[w];
  return s;
}
