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
#include "attention_vec.cuh"
#include "rope_store.cuh"
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

// PagedStore is rope_store_pf16's writer: values i0 and i1 of KV head kvh
// to token b's cells as f16, unless its cell is -1.
struct PagedStore {
  __half *kc, *vc;      // the pools
  const int *pos, *seq; // the tokens' positions and slots
  KVPool pool;          // the block table
  __device__ __forceinline__ void store(const float *__restrict__ v, int b, int kvh, int headDim, int kvdim, int i0,
                                        int i1, float a, float c) const {
    const long long cell = kv_cell(pool, seq[b], pos[b]);
    if (cell < 0) return;
    __half *kr = kv_at(kc, cell, kvdim) + (size_t)kvh * headDim;
    __half *vr = kv_at(vc, cell, kvdim) + (size_t)kvh * headDim;
    const float *vs = v + (size_t)b * kvdim + (size_t)kvh * headDim;
    kr[i0] = __float2half_rn(a), kr[i1] = __float2half_rn(c);
    vr[i0] = __float2half_rn(vs[i0]), vr[i1] = __float2half_rn(vs[i1]);
  }
};

// rope_store_pf16 is attention.cu's rope_store over a paged f16 pool
// (rope_store.cuh's rope_store_head): the key heads, and the value heads
// of the same index, go to the token's cells as f16. Grid (B, heads +
// kvHeads); headDim/2 threads rounded up to a multiple of 32.
extern "C" __global__ void rope_store_pf16(float *q, const float *__restrict__ k, const float *__restrict__ v,
                                           __half *kc, __half *vc, const float *__restrict__ qn,
                                           const float *__restrict__ kn, const int *__restrict__ pos,
                                           const int *__restrict__ seq, const float *__restrict__ factors,
                                           int heads, int kvHeads, int headDim, int ropeDim, float base, int neox,
                                           float eps, float mscale, KV_POOL_PARAMS) {
  rope_store_head(q, k, v, qn, kn, pos, factors, heads, kvHeads, headDim, ropeDim, base, neox, eps, mscale,
                  PagedStore{kc, vc, pos, seq, KV_POOL});
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
                              int kvHeads, int headDim, float scale, int tile, float cap, int window,       \
                              KV_POOL_PARAMS) {                                                             \
    attention_part<S, __half, KVPaged>(q, kc, vc, part, pos, seq, heads, kvHeads, headDim, scale, tile, cap,  \
                                       window, KVPaged{KV_POOL});                                          \
  }

ATTENTION_PART_PF16(2)
ATTENTION_PART_PF16(4)
ATTENTION_PART_PF16(8)
ATTENTION_PART_PF16(16)

// attention_vec_pf16_<GM>x<CPL> is attention_vec.cuh's attention_vec: the
// same partial results as attention_part_pf16 for groups of up to GM query
// heads and heads of up to 128·CPL values, with each row read once a block
// (AttentionPaged picks it where an instance fits). Its dynamic shared
// memory is attentionVec.shared(headDim) bytes (kvpool.go). Its _used twin
// takes splits of minPer positions at least and writes only the splits a
// token uses, for attention_merge_used (LLMSERVE_ATTENTION_VEC_MIN); its
// _arch twin soft-caps the scores (cap > 0) and walks a window (window >
// 0), for AttentionPagedArch (gemma2's layers); _arch_used is both (the
// merge reads the splits of the whole walk up to the token, those past
// its window's being empty).
#define ATTENTION_VEC_PF16(GM, CPL)                                                                         \
  extern "C" __global__ void __launch_bounds__(ATT_THREADS)                                                 \
      attention_vec_pf16_##GM##x##CPL(const float *__restrict__ q, const __half *__restrict__ kc,            \
                                      const __half *__restrict__ vc, float *__restrict__ part,              \
                                      const int *__restrict__ pos, const int *__restrict__ seq, int heads,  \
                                      int kvHeads, int headDim, float scale, KV_POOL_PARAMS) {              \
    attention_vec<GM, CPL, false>(q, kc, vc, part, pos, seq, heads, kvHeads, headDim, scale, 0, 0.f, 0,      \
                                  KVPaged{KV_POOL});                                                        \
  }                                                                                                         \
  extern "C" __global__ void __launch_bounds__(ATT_THREADS)                                                 \
      attention_vec_pf16_##GM##x##CPL##_arch(const float *__restrict__ q, const __half *__restrict__ kc,     \
                                             const __half *__restrict__ vc, float *__restrict__ part,       \
                                             const int *__restrict__ pos, const int *__restrict__ seq,      \
                                             int heads, int kvHeads, int headDim, float scale, float cap,   \
                                             int window, KV_POOL_PARAMS) {                                  \
    attention_vec<GM, CPL, false>(q, kc, vc, part, pos, seq, heads, kvHeads, headDim, scale, 0, cap, window, \
                                  KVPaged{KV_POOL});                                                        \
  }                                                                                                         \
  extern "C" __global__ void __launch_bounds__(ATT_THREADS)                                                 \
      attention_vec_pf16_##GM##x##CPL##_used(const float *__restrict__ q, const __half *__restrict__ kc,     \
                                             const __half *__restrict__ vc, float *__restrict__ part,       \
                                             const int *__restrict__ pos, const int *__restrict__ seq,      \
                                             int heads, int kvHeads, int headDim, float scale, int minPer,  \
                                             KV_POOL_PARAMS) {                                              \
    attention_vec<GM, CPL, true>(q, kc, vc, part, pos, seq, heads, kvHeads, headDim, scale, minPer, 0.f, 0,  \
                                 KVPaged{KV_POOL});                                                         \
  }                                                                                                         \
  extern "C" __global__ void __launch_bounds__(ATT_THREADS)                                                 \
      attention_vec_pf16_##GM##x##CPL##_arch_used(                                                          \
          const float *__restrict__ q, const __half *__restrict__ kc, const __half *__restrict__ vc,        \
          float *__restrict__ part, const int *__restrict__ pos, const int *__restrict__ seq, int heads,    \
          int kvHeads, int headDim, float scale, float cap, int window, int minPer, KV_POOL_PARAMS) {       \
    attention_vec<GM, CPL, true>(q, kc, vc, part, pos, seq, heads, kvHeads, headDim, scale, minPer, cap,     \
                                 window, KVPaged{KV_POOL});                                                 \
  }

ATTENTION_VEC_PF16(1, 1)
ATTENTION_VEC_PF16(2, 1)
ATTENTION_VEC_PF16(4, 1)
ATTENTION_VEC_PF16(8, 1)
ATTENTION_VEC_PF16(1, 2)
ATTENTION_VEC_PF16(2, 2)
ATTENTION_VEC_PF16(4, 2)

// kv_pool_cells writes kv_cell of (seq[i], pos[i]) to out[i], i < n, for
// the test that checks KVPoolLayout.CellOffset agrees with the device.
extern "C" __global__ void kv_pool_cells(const int *__restrict__ qseq, const int *__restrict__ qpos,
                                         long long *out, int n, KV_POOL_PARAMS) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = kv_cell(KV_POOL, qseq[i], qpos[i]);
}
