// fused.cuh: what every matrix-vector kernel shares around the product
// itself: the segments of a fused product (Q/K/V in one launch, gate and up
// in one launch), RMSNorm of the input, 8-bit quantization of the input
// and the epilogue (bias, residual add, SwiGLU).
//
// A fused product multiplies one input x (B rows of cols values) by up to
// three matrices of the same width. Row g of the launch is row g of the
// concatenation of the segments' rows; in GLU mode the launch has the rows
// of segment 0, and row r computes act(gate_r·x) * (up_r·x) (SiLU or GELU) from segment
// 0 (gate) and segment 1 (up) into segment 0's output.
//
// The input is read as x[b, i], times the RMSNorm scale of row b and
// norm[i] when a norm weight is given, then, for quantized weights, rounded
// to 8 bits in blocks of 32 values (d = max|v|/127, q = round(v/d)), as
// every path of llmserve does for quantized weights. Each kernel computes
// a column the same way whatever the batch, so a token's result does not
// depend on the batch it runs in (on the f32 kernels, up to the order of
// the final sums).
#pragma once
#include <cuda_fp16.h>

#include "act.cuh"
#include "kv.cuh"
#include "overlap.cuh"
#include "quant.cuh"
#include "reduce.cuh"

#define MV_THREADS 256 // threads per block of every matrix-vector kernel
#define MV_WARPS (MV_THREADS / 32)

// MVSeg is one matrix of a fused product and where its rows go: y is B rows
// of `rows` values; bias (rows values) may be null.
struct MVSeg {
  const uint8_t *W;
  float *y;
  const float *bias;
  long long rowBytes;
  int rows, type;
};

// MVRope is RoPE and the KV cache write fused into a Q/K/V product
// (segments q, k, v), where the two values a pair rotates are one row pair
// of the product: rows 2i and 2i+1 of a head (llama's pairwise rotation),
// or with neox rows i and i + ropeDim/2 (pair_rows in mvq.cu deals them
// so): q and k are rotated by angle pos[b] * base^(-2i/ropeDim) /
// factors[i] (pairs i < ropeDim/2; factors may be null), multiplied by
// mscale (LongRoPE's attention factor, else 1) and written to their outputs;
// k and v are also written to the cache (kc, vc: [maxSeqs][ctx][kvdim]) at
// position pos[b] of sequence seq[b] (MVArgs.pos, MVArgs.seq), unless that
// is padding. With tables set, kc and vc are instead the K and V cells of
// a paged f16 pool (kv.cuh: tables, tableCols, blockSize, blocks and
// maxSeqs address it; ctx is unused), written as rope_store_pf16 writes
// them. It lives in device memory (MVArgs.rope), set up once per layer.
struct MVRope {
  float *kc, *vc;
  const float *factors;
  int headDim, ropeDim, kvdim, ctx, maxSeqs;
  float base;
  const int *tables; // the pool's block tables, or null: the f32 cache
  int tableCols, blockSize, blocks, neox;
  float mscale;
  int pad;
};

struct MVArgs {
  MVSeg s0, s1, s2;
  int nseg;
  const float *x, *norm; // norm may be null: no RMSNorm
  int cols, B;
  float eps;
  int accumulate; // add to y instead of writing it (a residual connection)
  int glu;        // segments 0 and 1 are gate and up: 1 gated by SiLU, 2 by GELU (tanh); 0 not gated
  int wpr;        // mvq.cu: warps per row pair (1, 2, 4 or 8)
  const MVRope *rope; // mvq.cu: RoPE and the cache write of a Q/K/V product, or null
  // With rope: the step's positions and sequences (B each). Only host
  // copies write them, so kernels may read them before grid_wait.
  const int *pos, *seq;
};

// The kernel parameters of a fused product, flattened (the launch passes
// scalars), and the struct built from them.
#define MV_PARAMS                                                                                  \
  const uint8_t *W0, float *y0, const float *bias0, long long rb0, int rows0, int type0,           \
      const uint8_t *W1, float *y1, const float *bias1, long long rb1, int rows1, int type1,       \
      const uint8_t *W2, float *y2, const float *bias2, long long rb2, int rows2, int type2,       \
      int nseg, const float *x, const float *norm, int cols, int B, float eps, int accumulate, int glu,   \
      int wpr, const MVRope *rope, const int *pos, const int *seq
#define MV_ARGS                                                                                    \
  MVArgs {                                                                                         \
    {W0, y0, bias0, rb0, rows0, type0}, {W1, y1, bias1, rb1, rows1, type1},                        \
        {W2, y2, bias2, rb2, rows2, type2}, nseg, x, norm, cols, B, eps, accumulate, glu, wpr,     \
        rope, pos, seq                                                                             \
  }

static __device__ __forceinline__ MVSeg mv_seg(const MVArgs &a, int s) {
  return s == 0 ? a.s0 : s == 1 ? a.s1 : a.s2;
}

// mv_rows is the number of rows of the launch.
static __device__ __forceinline__ int mv_rows(const MVArgs &a) {
  if (a.glu) return a.s0.rows;
  return a.s0.rows + (a.nseg > 1 ? a.s1.rows : 0) + (a.nseg > 2 ? a.s2.rows : 0);
}

// mv_locate maps row g of the launch to its segment and the row within it.
static __device__ __forceinline__ int mv_locate(const MVArgs &a, int g, int *r) {
  if (a.glu || g < a.s0.rows) {
    *r = g;
    return 0;
  }
  g -= a.s0.rows;
  if (a.nseg == 2 || g < a.s1.rows) {
    *r = g;
    return 1;
  }
  *r = g - a.s1.rows;
  return 2;
}

// mv_store finishes output value v of row r of segment s for column b.
static __device__ __forceinline__ void mv_store(const MVArgs &a, int s, int r, int b, float v) {
  const MVSeg g = mv_seg(a, s);
  if (g.bias != nullptr) v += g.bias[r];
  float *o = g.y + (size_t)b * g.rows + r;
  *o = a.accumulate ? *o + v : v;
}

// mv_prefetch asks for the output of row r of segment s for column b to be
// brought to L1 where the epilogue will read it (a residual connection),
// so that the read at the end of the row's product does not go to DRAM.
static __device__ __forceinline__ void mv_prefetch(const MVArgs &a, int s, int r, int b) {
  if (!a.accumulate) return;
  const MVSeg g = mv_seg(a, s);
  asm volatile("prefetch.global.L1 [%0];" ::"l"(g.y + (size_t)b * g.rows + r));
}

// mv_store_pair finishes output values v0, v1 of rows r and r2 (r even,
// r2 = r+1; with a neox rope, r2 = r + ropeDim/2 for a rotated pair of q or
// k) of segment s for column b, with the rotation and cache write of rope
// (a copy of *a.rope; p and sq are the column's position and sequence)
// when it is not null (the same arithmetic as rope_store in attention.cu).
static __device__ __forceinline__ void mv_store_pair(const MVArgs &a, const MVRope *rope, int p, int sq, int s,
                                                     int r, int r2, int b, float v0, float v1) {
  if (rope == nullptr) {
    mv_store(a, s, r, b, v0);
    mv_store(a, s, r2, b, v1);
    return;
  }
  const MVSeg g = mv_seg(a, s);
  if (g.bias != nullptr) v0 += g.bias[r], v1 += g.bias[r2];
  const MVRope &rp = *rope;
  const int local = r % rp.headDim, i = rp.neox ? local : local >> 1;
  if (s < 2 && 2 * i < rp.ropeDim) { // a neox tail pair (r past ropeDim) has 2i ≥ 2·ropeDim
    float theta = (float)p * powf(rp.base, -2.f * (float)i / (float)rp.ropeDim);
    if (rp.factors != nullptr) theta /= rp.factors[i];
    float sn, cs;
    sincosf(theta, &sn, &cs);
    const float a2 = v0 * cs - v1 * sn, c2 = v0 * sn + v1 * cs;
    v0 = a2 * rp.mscale, v1 = c2 * rp.mscale;
  }
  float *o = g.y + (size_t)b * g.rows;
  o[r] = v0, o[r2] = v1;
  if (s == 0) return;
  if (rp.tables != nullptr) {
    const long long cell = kv_cell(kv_pool(rp.tables, rp.tableCols, rp.blockSize, rp.blocks, rp.maxSeqs), sq, p);
    if (cell >= 0) {
      __half *c = kv_at((__half *)(s == 1 ? rp.kc : rp.vc), cell, rp.kvdim);
      c[r] = __float2half_rn(v0), c[r2] = __float2half_rn(v1);
    }
    return;
  }
  if (sq >= 0 && sq < rp.maxSeqs && p >= 0 && p < rp.ctx) {
    float *c = (s == 1 ? rp.kc : rp.vc) + ((size_t)sq * rp.ctx + p) * rp.kvdim;
    c[r] = v0, c[r2] = v1;
  }
}

// mv_store_pair_global is mv_store_pair with the rotation's parameters and
// the column's position and sequence read from global memory.
static __device__ __forceinline__ void mv_store_pair_global(const MVArgs &a, int s, int r, int r2, int b, float v0,
                                                            float v1) {
  if (a.rope == nullptr) {
    mv_store_pair(a, nullptr, 0, 0, s, r, r2, b, v0, v1);
  } else {
    mv_store_pair(a, a.rope, a.pos[b], a.seq[b], s, r, r2, b, v0, v1);
  }
}

// mv_store_glu finishes row r of a GLU product for column b from the gate
// and up dot products, with the activation a.glu names.
static __device__ __forceinline__ void mv_store_glu(const MVArgs &a, int r, int b, float gate, float up) {
  if (a.s0.bias != nullptr) gate += a.s0.bias[r];
  if (a.s1.bias != nullptr) up += a.s1.bias[r];
  const float v = glu_value(gate, up, a.glu == 2 ? 1 : 0);
  float *o = a.s0.y + (size_t)b * a.s0.rows + r;
  *o = a.accumulate ? *o + v : v;
}

// rms_scale is 1/sqrt(mean(x²) + eps) over the n values of x, computed by
// the whole block (MV_THREADS threads) in a fixed order; every thread gets
// it. red is MV_WARPS floats of shared memory.
static __device__ __forceinline__ float rms_scale(const float *x, int n, float eps, float *red) {
  float ss = 0.f;
  for (int i = threadIdx.x; i < n; i += MV_THREADS) ss += x[i] * x[i];
  return 1.f / sqrtf(block_sum<MV_WARPS>(ss, red) / (float)n + eps);
}

// stage_value is input value i of a row of x (scale its RMSNorm scale).
static __device__ __forceinline__ float4 stage4(const float *xrow, const float *norm, float scale, int i) {
  float4 v = *(const float4 *)(xrow + i);
  if (norm != nullptr) {
    const float4 w = *(const float4 *)(norm + i);
    v.x = v.x * scale * w.x, v.y = v.y * scale * w.y, v.z = v.z * scale * w.z, v.w = v.w * scale * w.w;
  }
  return v;
}

// q8_quad quantizes one block of 32 values held 4 per lane by 8 consecutive
// lanes (aligned to 8) of a converged warp: it returns this lane's 4 values
// as packed signed bytes, and the block's scale d and its sum of q (0
// without SUM, for products whose weights have no minimums).
template <bool SUM = true>
static __device__ __forceinline__ uint32_t q8_quad(float4 v, float *d, int *qsum) {
  float amax = fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w)));
#pragma unroll
  for (int off = 4; off > 0; off >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
  *d = amax / 127.f;
  const float id = amax > 0.f ? 127.f / amax : 0.f;
  const int q0 = __float2int_rn(v.x * id), q1 = __float2int_rn(v.y * id);
  const int q2 = __float2int_rn(v.z * id), q3 = __float2int_rn(v.w * id);
  int s = 0;
  if constexpr (SUM) {
    s = q0 + q1 + q2 + q3;
#pragma unroll
    for (int off = 4; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
  }
  *qsum = s;
  return (uint32_t)(q0 & 0xFF) | (uint32_t)(q1 & 0xFF) << 8 | (uint32_t)(q2 & 0xFF) << 16 | (uint32_t)q3 << 24;
}

// q8_value is byte k of packed q times d: the value a quantized input holds.
static __device__ __forceinline__ float q8_value(uint32_t q, int k, float d) {
  return d * (float)(int)(signed char)((q >> (8 * k)) & 0xFF);
}
