// attention_paged.cu: the cache writes and the decode attention of a step
// over a paged f16 KV pool (kv.cuh), beside attention.cu's kernels for the
// per-slot f32 cache. Token b is position pos[b] of sequence slot seq[b];
// its cell is kv_cell of the block table, and a token whose cell is -1
// (padding: seq < 0, or a position its table row does not reach) writes
// nothing and attends to nothing. Every pool parameter list is the one
// of kv_pool: tables, tableCols, blockSize, blocks, maxSeqs.
//
// The attention is attention_part.cuh's body, as attention.cu's is, and
// its partial results have the same layout, so attention.cu's
// attention_merge (launched with ctx = tableCols·blockSize) merges them.

#include <cuda_fp16.h>

#include "attention_part.cuh"
#include "kv.cuh"
#include "overlap.cuh"

#define KV_POOL_PARAMS const int *__restrict__ tables, int tableCols, int blockSize, int blocks, int maxSeqs
#define KV_POOL kv_pool(tables, tableCols, blockSize, blocks, maxSeqs)

// kv_store_pf16: the cells of token b take k[b, :] and v[b, :], rounded to
// f16; grid B, any block size.
extern "C" __global__ void kv_store_pf16(const float *__restrict__ k, const float *__restrict__ v, __half *kc,
                                         __half *vc, const int *__restrict__ pos, const int *__restrict__ seq,
                                         int kvdim, KV_POOL_PARAMS) {
  const int b = blockIdx.x;
  const long long cell = kv_cell(KV_POOL, seq[b], pos[b]);
  if (cell < 0) return;
  __half *kr = kv_at(kc, cell, kvdim), *vr = kv_at(vc, cell, kvdim);
  for (int i = threadIdx.x; i < kvdim; i += blockDim.x) {
    kr[i] = __float2half_rn(k[(size_t)b * kvdim + i]);
    vr[i] = __float2half_rn(v[(size_t)b * kvdim + i]);
  }
}

// pa_head_sum adds v over the block (blockDim.x a multiple of 32, ≤ 256).
static __device__ __forceinline__ float pa_head_sum(float v) {
  __shared__ float part[8];
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  const int warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  if ((threadIdx.x & 31) == 0) part[warp] = v;
  __syncthreads();
  float t = 0.f;
  for (int w = 0; w < nw; w++) t += part[w];
  return t;
}

// rope_store_pf16 is attention.cu's rope_store over a paged f16 pool:
// block (b, h) takes query head h (h < heads) or key head h - heads,
// RMS-normalizes it by qn or kn when given, rotates its first ropeDim
// values by position pos[b] (pairs (2i, 2i+1), or (i, i + ropeDim/2) with
// neox), rotates query heads in place and writes key heads, and the value
// head of the same index, to the token's cells as f16. Grid (B, heads +
// kvHeads); headDim/2 threads rounded up to a multiple of 32.
extern "C" __global__ void rope_store_pf16(float *q, const float *__restrict__ k, const float *__restrict__ v,
                                           __half *kc, __half *vc, const float *__restrict__ qn,
                                           const float *__restrict__ kn, const int *__restrict__ pos,
                                           const int *__restrict__ seq, const float *__restrict__ factors,
                                           int heads, int kvHeads, int headDim, int ropeDim, float base, int neox,
                                           float eps, KV_POOL_PARAMS) {
  grid_begin();
  const int b = blockIdx.x, h = blockIdx.y, i = threadIdx.x;
  const bool isK = h >= heads;
  const int kvh = h - heads, kvdim = kvHeads * headDim;
  const float *src = isK ? k + (size_t)b * kvdim + (size_t)kvh * headDim : q + ((size_t)b * heads + h) * headDim;
  const float *nw = isK ? kn : qn;
  const bool active = 2 * i < headDim, rot = 2 * i < ropeDim;
  const int i0 = rot ? (neox ? i : 2 * i) : ropeDim + 2 * (i - ropeDim / 2);
  const int i1 = rot ? (neox ? i + ropeDim / 2 : 2 * i + 1) : i0 + 1;
  float a = active ? src[i0] : 0.f, c = active ? src[i1] : 0.f;
  if (nw != nullptr) {
    const float s = 1.f / sqrtf(pa_head_sum(a * a + c * c) / (float)headDim + eps);
    if (active) a = a * s * nw[i0], c = c * s * nw[i1];
  }
  if (!active) return;
  if (rot) {
    float theta = (float)pos[b] * powf(base, -2.f * (float)i / (float)ropeDim);
    if (factors != nullptr) theta /= factors[i];
    float sn, cs;
    sincosf(theta, &sn, &cs);
    const float a2 = a * cs - c * sn, c2 = a * sn + c * cs;
    a = a2, c = c2;
  }
  if (!isK) {
    float *dst = q + ((size_t)b * heads + h) * headDim;
    dst[i0] = a, dst[i1] = c;
    return;
  }
  const long long cell = kv_cell(KV_POOL, seq[b], pos[b]);
  if (cell < 0) return;
  __half *kr = kv_at(kc, cell, kvdim) + (size_t)kvh * headDim;
  __half *vr = kv_at(vc, cell, kvdim) + (size_t)kvh * headDim;
  const float *vs = v + (size_t)b * kvdim + (size_t)kvh * headDim;
  kr[i0] = __float2half_rn(a), kr[i1] = __float2half_rn(c);
  vr[i0] = __float2half_rn(vs[i0]), vr[i1] = __float2half_rn(vs[i1]);
}

// attention_part_pf16_<S> is attention_part.cuh's attention_part over the
// paged f16 pool (KVPaged): a tile's rows are copied 8 values at a time,
// each from its own cell, and a row whose cell is -1 is zeros; the scores
// and weighted sums are in f32. Its dynamic shared memory is
// attentionPagedShared(tile) bytes.
#define ATTENTION_PART_PF16(S)                                                                              \
  extern "C" __global__ void __launch_bounds__(ATT_THREADS)                                                 \
      attention_part_pf16_##S(const float *__restrict__ q, const __half *__restrict__ kc,                   \
                              const __half *__restrict__ vc, float *__restrict__ part,                      \
                              const int *__restrict__ pos, const int *__restrict__ seq, int heads,          \
                              int kvHeads, int headDim, float scale, int tile, KV_POOL_PARAMS) {            \
    attention_part<S, __half, KVPaged>(q, kc, vc, part, pos, seq, heads, kvHeads, headDim, scale, tile,       \
                                       KVPaged{KV_POOL});                                                  \
  }

ATTENTION_PART_PF16(2)
ATTENTION_PART_PF16(4)
ATTENTION_PART_PF16(8)
ATTENTION_PART_PF16(16)

// kv_pool_cells writes kv_cell of (seq[i], pos[i]) to out[i], i < n, for
// the test that checks KVPoolLayout.CellOffset agrees with the device.
extern "C" __global__ void kv_pool_cells(const int *__restrict__ qseq, const int *__restrict__ qpos,
                                         long long *out, int n, KV_POOL_PARAMS) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = kv_cell(KV_POOL, qseq[i], qpos[i]);
}
