// mvq.cu: fused products (fused.cuh) for the common quantized types
// (Q4_0, Q8_0, Q4_K, Q5_K, Q6_K), with the input quantized to 8 bits once
// per block and integer dot products (dp4a). Block row y takes batch
// columns [NB*y, NB*y+NB).
//
// The whole input is staged in shared memory first (normalized and
// quantized): for column b, xq holds the 8-bit values and xd the scales.
// Lane l of a warp then takes the 64-value group 32*it + l of its rows at
// iteration it, two rows at a time (two consecutive rows of a segment, or
// the gate and up rows of a GLU product), so each staged value serves two
// rows and each lane has the loads of two rows in flight. Piece k (values
// 16k..16k+15) of group g of column b lies at int4 index
// b*cols/16 + ((g/32)*4 + k)*32 + g%32, so a warp's reads of one piece are
// 512 contiguous bytes; xd holds each group's (d0, s0, d1, s1): the scales
// of its two 32-value blocks and d times their sums of q.
//
// Blocks loop over row pairs (dealt in turn), so the staging is paid once per
// block, not once per row. A column's result does not depend on the other
// columns of the batch: every batch size gives a token the same bits.
#include "mvq_dot.cuh"

// stage_f32 writes column b0 of the (normalized) input to shared memory
// as floats, for the 16-bit float products.
template <int THREADS>
static __device__ __forceinline__ void stage_f32(const MVArgs &a, int b0, float4 *xs, float *red) {
  const float *xr = a.x + (size_t)b0 * a.cols;
  const float scale = stage_scale<THREADS>(a, xr, red);
  for (int t = threadIdx.x; t < a.cols >> 2; t += THREADS) xs[t] = stage4(xr, a.norm, scale, 4 * t);
}

// half8 converts 8 packed 16-bit floats (F16 or BF16) to floats.
template <int T>
static __device__ __forceinline__ void half8(uint4 v, float f[8]) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int k = 0; k < 4; k++) {
    if (T == T_F16) {
      f[2 * k] = h2f(w[k] & 0xFFFF), f[2 * k + 1] = h2f(w[k] >> 16);
    } else {
      f[2 * k] = bf2f(w[k] & 0xFFFF), f[2 * k + 1] = bf2f(w[k] >> 16);
    }
  }
}

// HALF_U is how many 8-value pieces of each row a lane loads before using
// any: 2 rows x HALF_U x 16 bytes in flight per lane.
#define HALF_U 4

// row_pair_h accumulates the dot products of 16-bit float rows ra and rb
// with the staged column xs into acc: lane `first` takes pieces (8 values,
// 16 bytes) first, first+step, ... in tiles of 32 pieces.
template <int T, int NB>
static __device__ __forceinline__ void row_pair_h(const uint8_t *ra, const uint8_t *rb, int cols, const float4 *xs,
                                                  int first, int step, float acc[2][NB]) {
  const int P = cols >> 3;
  for (int p0 = first; p0 < P; p0 += HALF_U * step) {
    uint4 va[HALF_U], vb[HALF_U];
#pragma unroll
    for (int u = 0; u < HALF_U; u++) {
      const int p = p0 + u * step;
      if (p < P) va[u] = ld128(ra + 16 * (size_t)p), vb[u] = ld128(rb + 16 * (size_t)p);
    }
#pragma unroll
    for (int u = 0; u < HALF_U; u++) {
      const int p = p0 + u * step;
      if (p < P) {
        float fa[8], fb[8];
        half8<T>(va[u], fa);
        half8<T>(vb[u], fb);
        const float4 x0 = xs[2 * p], x1 = xs[2 * p + 1];
        const float x[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
        float sa = 0.f, sb = 0.f;
#pragma unroll
        for (int k = 0; k < 8; k++) sa += fa[k] * x[k], sb += fb[k] * x[k];
        acc[0][0] += sa, acc[1][0] += sb;
      }
    }
  }
}

// group_sync waits for the n threads (whole warps) that use named barrier
// id.
static __device__ __forceinline__ void group_sync(int id, int n) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(n) : "memory");
}

// PairRows is where row pair pi of a launch lies: rows ra and rb (of
// segment s, rows r and r2; in GLU mode the gate and up rows r).
struct PairRows {
  const uint8_t *ra, *rb;
  int s, r, r2, type;
};

// pair_rows finds row pair pi: rows 2pi and 2pi+1 of the launch, but where
// rope (a neox rotation; may be null) rotates them, rows i and i +
// ropeDim/2 of the head in Q and K, so that the rotation's two values are
// the pair's (a head's pairs past ropeDim/2 keep the rows after ropeDim,
// two by two).
static __device__ __forceinline__ PairRows pair_rows(const MVArgs &a, int pi, const MVRope *rope) {
  PairRows p;
  if (a.glu) {
    p.s = 0, p.r = pi, p.r2 = pi, p.type = a.s0.type;
    p.ra = a.s0.W + (size_t)pi * a.s0.rowBytes, p.rb = a.s1.W + (size_t)pi * a.s1.rowBytes;
    return p;
  }
  p.s = mv_locate(a, 2 * pi, &p.r);
  p.r2 = p.r + 1;
  if (rope != nullptr && rope->neox && p.s < 2) {
    const int hd = rope->headDim, half = rope->ropeDim >> 1, q = (p.r % hd) >> 1;
    if (q < half) p.r -= q, p.r2 = p.r + half; // from h·hd + 2q to h·hd + q
  }
  const MVSeg sg = mv_seg(a, p.s);
  p.type = sg.type;
  p.ra = sg.W + (size_t)p.r * sg.rowBytes, p.rb = sg.W + (size_t)p.r2 * sg.rowBytes;
  return p;
}

// The kinds of mvq kernel: MVQ_ALL reads every 8-bit type; MVQ_F16 the
// 16-bit floats (mvh_1); MVQ_K only Q4_K and wide Q6_K (a Q4_K_M model's
// products) and MVQ_Q8 only wide Q8_0. A kernel's registers are those of
// its most demanding type, so the kernels of one family spill less (the
// batch-1 kernel of every type spills; mv8_1 does not) and run faster.
#define MVQ_ALL 0
#define MVQ_F16 1
#define MVQ_K 2
#define MVQ_Q8 3

// pair_dot runs row_pair for a row pair of the given type on a kernel of
// kind KIND.
template <int KIND, int NB>
static __device__ __forceinline__ void pair_dot(int type, const uint8_t *ra, const uint8_t *rb, int cols, int nb,
                                                const int4 *xq, const float4 *xd, int first, int step,
                                                float acc[2][NB]) {
  if constexpr (KIND == MVQ_K) {
    if (type == T_Q4_K) row_pair<T_Q4_K, NB>(ra, rb, cols, nb, xq, xd, first, step, acc);
    if (type == T_Q6_K + T_WIDE) row_pair<T_Q6_K + T_WIDE, NB>(ra, rb, cols, nb, xq, xd, first, step, acc);
  } else if constexpr (KIND == MVQ_Q8) {
    row_pair<T_Q8_0 + T_WIDE, NB>(ra, rb, cols, nb, xq, xd, first, step, acc);
  } else {
    switch (type) {
    case T_Q4_K: row_pair<T_Q4_K, NB>(ra, rb, cols, nb, xq, xd, first, step, acc); break;
    case T_Q6_K: row_pair<T_Q6_K, NB>(ra, rb, cols, nb, xq, xd, first, step, acc); break;
    case T_Q5_K: row_pair<T_Q5_K, NB>(ra, rb, cols, nb, xq, xd, first, step, acc); break;
    case T_Q8_0: row_pair<T_Q8_0, NB>(ra, rb, cols, nb, xq, xd, first, step, acc); break;
    case T_Q4_0: row_pair<T_Q4_0, NB>(ra, rb, cols, nb, xq, xd, first, step, acc); break;
    case T_Q6_K + T_WIDE: row_pair<T_Q6_K + T_WIDE, NB>(ra, rb, cols, nb, xq, xd, first, step, acc); break;
    case T_Q8_0 + T_WIDE: row_pair<T_Q8_0 + T_WIDE, NB>(ra, rb, cols, nb, xq, xd, first, step, acc); break;
    }
  }
}

// mvq runs a launch on a kernel of kind KIND (MVQ_F16: NB 1, the input
// staged as floats, pieces of 8 values per lane in tiles of 32 pieces
// shared out among a pair's W warps; the others: the input staged as 8-bit
// values).
template <int NB, int THREADS, int KIND>
static __device__ __forceinline__ void mvq(const MVArgs &a) {
  constexpr int WARPS = THREADS / 32;
  extern __shared__ int4 smem[];
  __shared__ float red[WARPS];
  const int cols = a.cols;
  int4 *xq = smem;
  float4 *xd = (float4 *)(smem + (size_t)NB * xs16(cols));
  const int b0 = blockIdx.y * NB, nb = min(NB, a.B - b0);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, total = mv_rows(a);
  // W warps share a row pair, each taking every W-th tile of 32 groups;
  // their sums meet in shared memory in a fixed order.
  const int W = a.wpr, sub = warp % W, per = WARPS / W;
  const int pairs = a.glu ? total : total / 2;
  // The rotation's parameters and the tile's positions and sequences are
  // copied to shared memory before waiting (no kernel writes them), so
  // that the epilogues read nothing from global memory; mvh_1 reads them
  // in its epilogue, as the copy makes it spill (8B F16 -3%).
  static_assert(sizeof(MVRope) % 4 == 0, "MVRope: copied in words");
  constexpr int RW = sizeof(MVRope) / 4;
  __shared__ MVRope rope;
  __shared__ int rpos[NB], rseq[NB];
  if (KIND != MVQ_F16 && a.rope != nullptr) {
    if (threadIdx.x < RW) ((uint32_t *)&rope)[threadIdx.x] = __ldg((const uint32_t *)a.rope + threadIdx.x);
    if (threadIdx.x < nb) rpos[threadIdx.x] = __ldg(a.pos + b0 + threadIdx.x), rseq[threadIdx.x] = __ldg(a.seq + b0 + threadIdx.x);
  }
  grid_wait();
  if constexpr (KIND == MVQ_F16) {
    stage_f32<THREADS>(a, b0, (float4 *)smem, red);
  } else {
    stage_q8<THREADS, KIND != MVQ_Q8>(a, b0, nb, (uint32_t *)xq, (float2 *)xd, red);
  }
  __syncthreads();
  // finish runs the epilogue of pair p for column b0 + c.
  const auto finish = [&](const PairRows &p, int c, float v0, float v1) {
    if (a.glu) {
      mv_store_glu(a, p.r, b0 + c, v0, v1);
    } else if constexpr (KIND == MVQ_F16) {
      mv_store_pair_global(a, p.s, p.r, p.r2, b0 + c, v0, v1);
    } else {
      mv_store_pair(a, a.rope != nullptr ? &rope : nullptr, rpos[c], rseq[c], p.s, p.r, p.r2, b0 + c, v0, v1);
    }
  };
  // The rotation's parameters as the pairs read them (neox deals rows).
  const MVRope *rp = KIND == MVQ_F16 ? a.rope : (a.rope != nullptr ? &rope : nullptr);
  __shared__ float part[WARPS][2][NB];
  // Pairs are dealt to the blocks in turn (pair i to block i mod the
  // grid), so a matrix of few pairs still spreads over every block.
  for (int it = 0; it * per * gridDim.x < pairs; it++) {
    const int pi = (it * per + warp / W) * gridDim.x + blockIdx.x;
    const bool on = pi < pairs;
    float acc[2][NB];
#pragma unroll
    for (int b = 0; b < NB; b++) acc[0][b] = acc[1][b] = 0.f;
    if (on) {
      const PairRows p = pair_rows(a, pi, rp);
      // The residual's prefetch only where it spills nothing: in mvk_1 and
      // the batch tiles its address registers spill (1B Q4_K_M -2%).
      if constexpr (KIND == MVQ_Q8) {
        if (sub == 0 && lane < nb) mv_prefetch(a, p.s, p.r, b0 + lane);
      }
      const int first = sub * 32 + lane, step = 32 * W;
      if constexpr (KIND == MVQ_F16) {
        if (p.type == T_F16) row_pair_h<T_F16, NB>(p.ra, p.rb, cols, (const float4 *)smem, first, step, acc);
        if (p.type == T_BF16) row_pair_h<T_BF16, NB>(p.ra, p.rb, cols, (const float4 *)smem, first, step, acc);
      } else {
        pair_dot<KIND, NB>(p.type, p.ra, p.rb, cols, nb, xq, xd, first, step, acc);
      }
#pragma unroll
      for (int b = 0; b < NB; b++) {
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
          acc[0][b] += __shfl_xor_sync(0xffffffffu, acc[0][b], off);
          acc[1][b] += __shfl_xor_sync(0xffffffffu, acc[1][b], off);
        }
      }
    }
    // The pair's segment and rows, found again rather than kept live
    // through the products.
    PairRows p = {};
    if (on) p = pair_rows(a, pi, rp);
    if (W > 1) {
      // Only the W warps of the pair wait for each other (barrier 1 + the
      // pair's index in the block; 0 is __syncthreads'), so the block's
      // other pairs run on.
      if (on && lane == 0) {
#pragma unroll
        for (int b = 0; b < NB; b++) part[warp][0][b] = acc[0][b], part[warp][1][b] = acc[1][b];
      }
      group_sync(1 + warp / W, 32 * W);
      if (on && sub == 0 && lane < nb) {
        float g0 = 0.f, g1 = 0.f;
        for (int w = warp; w < warp + W; w++) g0 += part[w][0][lane], g1 += part[w][1][lane];
        finish(p, lane, g0, g1);
      }
      group_sync(1 + warp / W, 32 * W);
      continue;
    }
    // The butterfly left every column's sums in every lane: lane b takes
    // column b, so the columns' epilogues run side by side, not in turn.
    float v0 = 0.f, v1 = 0.f;
#pragma unroll
    for (int b = 0; b < NB; b++)
      if (lane == b) v0 = acc[0][b], v1 = acc[1][b];
    if (on && lane < nb) finish(p, lane, v0, v1);
  }
  grid_launch();
}

// mvq_<NB>: THREADS threads per block, MINB blocks per multiprocessor.
// Batch 1 fits in 64 registers, so 32 warps per multiprocessor keep more
// loads in flight, in blocks of 16 warps: each block stages the input
// once, so wider blocks read it fewer times. The wider tiles need 80
// registers (24 warps, in blocks of 8).
#define MVQ(NAME, NB, THREADS, MINB, KIND)                                                          \
  extern "C" __global__ void __launch_bounds__(THREADS, MINB) NAME(MV_PARAMS) { mvq<NB, THREADS, KIND>(MV_ARGS); }

MVQ(mvq_1, 1, 512, 2, MVQ_ALL)
MVQ(mvq_2, 2, 256, 3, MVQ_ALL)
MVQ(mvq_4, 4, 256, 3, MVQ_ALL)
MVQ(mvq_8, 8, 256, 3, MVQ_ALL)
// mvh_1: the 16-bit float products for one column, shaped as mvq_1.
MVQ(mvh_1, 1, 512, 2, MVQ_F16)
// mvk_1 and mv8_1: mvq_1 for Q4_K_M's types and for wide Q8_0. (Blocks of
// 32 warps, staging the input half as often, measured the same.)
MVQ(mvk_1, 1, 512, 2, MVQ_K)
MVQ(mv8_1, 1, 512, 2, MVQ_Q8)
