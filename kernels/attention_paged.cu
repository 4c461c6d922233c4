// attention_paged.cu: the cache writes and the decode attention of a step
// over a paged f16 KV pool (kv.cuh), beside attention.cu's kernels for the
// per-slot f32 cache. Token b is position pos[b] of sequence slot seq[b];
// its cell is kv_cell of the block table, and a token whose cell is -1
// (padding: seq < 0, or a position its table row does not reach) writes
// nothing and attends to nothing. Every pool parameter list is the one
// of kv_pool: tables, tableCols, blockSize, blocks, maxSeqs.
//
// The softmax and the merge of the splits are attention.cu's: the partial
// results have the same layout, so attention_merge (launched with ctx =
// tableCols·blockSize) merges them.

#include <cuda_fp16.h>

#include "kv.cuh"
#include "overlap.cuh"

#define PA_THREADS 128
#define PA_MAXG 8   // query heads per KV head
#define PA_TILE 32  // positions per tile at most (one per lane)

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

static __device__ __forceinline__ void pa_cp_async16(void *dst, const void *src) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(src));
}
static __device__ __forceinline__ void pa_cp_async_wait() {
  asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;" ::: "memory");
}

// attention_part_pf16<S> is attention.cu's attention_part over the paged
// f16 pool: for token b, KV head kvh and split s of the positions
// 0..pos[b], the online-softmax partial result (acc[0..headDim), m, l) of
// each of the G query heads of the KV head, at
// part[((b*heads + h)*splits + s)*(headDim + 2)]. Grid (B, kvHeads,
// splits), PA_THREADS threads, attentionPagedShared(tile) bytes of
// dynamic shared memory: a tile's K rows (f16, pitch headDim+8), V rows
// (f16), the scaled queries (f32) and the scores (f32).
//
// A tile's rows are copied with cp.async 16 bytes (8 values) at a time,
// each row from its own cell (a tile may cross blocks); a row whose cell
// is -1 is zeros. Scores and the weighted sums are in f32.
template <int S>
static __device__ __forceinline__ void attention_part_pf16(const float *__restrict__ q, const __half *__restrict__ kc,
                                                           const __half *__restrict__ vc, float *__restrict__ part,
                                                           const int *__restrict__ pos, const int *__restrict__ seq,
                                                           int heads, int kvHeads, int headDim, float scale, int tile,
                                                           const KVPool pool) {
  extern __shared__ __align__(16) unsigned char pa_smem[];
  __shared__ float mS[PA_MAXG], lS[PA_MAXG], corrS[PA_MAXG];
  const int b = blockIdx.x, kvh = blockIdx.y, split = blockIdx.z, splits = gridDim.z;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int G = heads / kvHeads, kvdim = kvHeads * headDim, hd8 = headDim >> 3, pitch = headDim + 8;
  __half *ks = (__half *)pa_smem;             // tile × pitch
  __half *vs = ks + tile * pitch;             // tile × headDim
  float *qs = (float *)(vs + tile * headDim); // G × headDim
  float *sc = qs + G * headDim;               // G × tile
  const int s = seq[b], p = pos[b];
  int t0 = 0, t1 = 0;
  if (kv_cell(pool, s, p) >= 0) {
    const int per = (p + splits) / splits;
    t0 = min(split * per, p + 1);
    t1 = min(t0 + per, p + 1);
  }
  auto fetch = [&](int tt, int n) {
    for (int c = tid; c < n * hd8; c += PA_THREADS) {
      const int j = c / hd8, e = 8 * (c - j * hd8);
      const long long cell = kv_cell(pool, s, tt + j);
      if (cell >= 0) {
        const size_t at = (size_t)kvh * headDim + e;
        pa_cp_async16(ks + j * pitch + e, kv_at(kc, cell, kvdim) + at);
        pa_cp_async16(vs + j * headDim + e, kv_at(vc, cell, kvdim) + at);
      } else {
        *(uint4 *)(ks + j * pitch + e) = make_uint4(0, 0, 0, 0);
        *(uint4 *)(vs + j * headDim + e) = make_uint4(0, 0, 0, 0);
      }
    }
  };
  grid_wait();
  if (t0 < t1) fetch(t0, min(tile, t1 - t0));
  const float *qh = q + ((size_t)b * heads + (size_t)kvh * G) * headDim;
  for (int i = tid; i < G * headDim; i += PA_THREADS) qs[i] = qh[i] * scale;
  if (tid < G) mS[tid] = -INFINITY, lS[tid] = 0.f;
  const int slots = G * headDim;
  float acc[S];
#pragma unroll
  for (int k = 0; k < S; k++) acc[k] = 0.f;
  for (int tt = t0; tt < t1; tt += tile) {
    const int n = min(tile, t1 - tt);
    pa_cp_async_wait();
    __syncthreads();
    for (int idx = tid; idx < G * n; idx += PA_THREADS) {
      const int g = idx / n, j = idx - g * n;
      const float2 *qv = (const float2 *)(qs + g * headDim);
      const __half2 *kv = (const __half2 *)(ks + j * pitch);
      float d = 0.f;
#pragma unroll 8
      for (int i = 0; i < headDim / 2; i++) {
        const float2 x = qv[i], y = __half22float2(kv[i]);
        d += x.x * y.x + x.y * y.y;
      }
      sc[g * tile + j] = d;
    }
    __syncthreads();
    for (int g = warp; g < G; g += PA_THREADS / 32) {
      const float v = lane < n ? sc[g * tile + lane] : -INFINITY;
      float m = v;
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
      const float mOld = mS[g], mNew = fmaxf(mOld, m);
      const float e = lane < n ? expf(v - mNew) : 0.f;
      float sum = e;
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
      if (lane < n) sc[g * tile + lane] = e;
      if (lane == 0) {
        const float corr = mOld == -INFINITY ? 0.f : expf(mOld - mNew);
        corrS[g] = corr, lS[g] = lS[g] * corr + sum, mS[g] = mNew;
      }
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < S; k++) {
      const int idx = tid + k * PA_THREADS;
      if (idx < slots) {
        const int g = idx / headDim, d = idx - g * headDim;
        const float *w = sc + g * tile;
        float a = acc[k] * corrS[g];
        for (int j = 0; j < n; j++) a += w[j] * __half2float(vs[j * headDim + d]);
        acc[k] = a;
      }
    }
    __syncthreads();
    if (tt + tile < t1) fetch(tt + tile, min(tile, t1 - tt - tile));
  }
#pragma unroll
  for (int k = 0; k < S; k++) {
    const int idx = tid + k * PA_THREADS;
    if (idx < slots) {
      const int g = idx / headDim, d = idx - g * headDim;
      part[(((size_t)b * heads + (size_t)kvh * G + g) * splits + split) * (headDim + 2) + d] = acc[k];
    }
  }
  if (tid < G) {
    float *o = part + (((size_t)b * heads + (size_t)kvh * G + tid) * splits + split) * (headDim + 2);
    o[headDim] = mS[tid];
    o[headDim + 1] = lS[tid];
  }
  grid_launch();
}

#define ATTENTION_PART_PF16(S)                                                                              \
  extern "C" __global__ void __launch_bounds__(PA_THREADS)                                                  \
      attention_part_pf16_##S(const float *__restrict__ q, const __half *__restrict__ kc,                   \
                              const __half *__restrict__ vc, float *__restrict__ part,                      \
                              const int *__restrict__ pos, const int *__restrict__ seq, int heads,          \
                              int kvHeads, int headDim, float scale, int tile, KV_POOL_PARAMS) {            \
    attention_part_pf16<S>(q, kc, vc, part, pos, seq, heads, kvHeads, headDim, scale, tile, KV_POOL);       \
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
