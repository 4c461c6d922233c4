// attention.cu: the KV cache write and attention over the cache for a
// batch of tokens, each token b at position pos[b] of sequence slot seq[b]
// (read from device memory, so a captured graph serves every step). A token
// with seq[b] < 0 is padding: it writes nothing to the cache and attends to
// nothing (its output is zero).
//
// Cache layout, per layer: [maxSeqs][ctx][kvHeads*headDim] f32.

#include "attention_part.cuh"
#include "rope_store.cuh"
#include "overlap.cuh"

#define ATT_MAX_SPLITS 64 // attentionSplits in attention_cuda.go stays at or below

// kv_store: kc/vc[seq[b], pos[b], :] = k/v[b, :]; grid B, any block size.
extern "C" __global__ void kv_store(const float *__restrict__ k, const float *__restrict__ v, float *kc,
                                    float *vc, const int *__restrict__ pos, const int *__restrict__ seq,
                                    int kvdim, int ctx, int maxSeqs) {
  const int b = blockIdx.x, s = seq[b], p = pos[b];
  if (s < 0 || s >= maxSeqs || p < 0 || p >= ctx) return;
  const size_t dst = ((size_t)s * ctx + p) * kvdim;
  for (int i = threadIdx.x; i < kvdim; i += blockDim.x) {
    kc[dst + i] = k[(size_t)b * kvdim + i];
    vc[dst + i] = v[(size_t)b * kvdim + i];
  }
}

// attention_part_<S> is attention_part.cuh's attention_part over this
// file's cache, f32 of [maxSeqs][ctx] positions (KVFlat); S is its slots
// per thread (attentionSlots in attention_cuda.go picks it).
#define ATTENTION_PART(S)                                                                            \
  extern "C" __global__ void __launch_bounds__(ATT_THREADS)                                          \
      attention_part_##S(const float *__restrict__ q, const float *__restrict__ kc,                  \
                         const float *__restrict__ vc, float *__restrict__ part,                     \
                         const int *__restrict__ pos, const int *__restrict__ seq, int heads,        \
                         int kvHeads, int headDim, int ctx, int maxSeqs, float scale, int tile,      \
                         float cap, int window) {                                                    \
    attention_part<S, float, KVFlat>(q, kc, vc, part, pos, seq, heads, kvHeads, headDim, scale, tile, cap,     \
                                     window, KVFlat{ctx, maxSeqs});                                          \
  }

ATTENTION_PART(2)
ATTENTION_PART(4)
ATTENTION_PART(8)
ATTENTION_PART(16)

// attention_merge: out[b, h, :] = the softmax-weighted sum of V over all
// positions, merged from the splits' partial results; zeros for padding
// tokens. Grid (B, heads), 32*ceil(headDim/32) threads (at least one per
// dimension). Every load is issued at the start: each thread reads the
// maxima and sums of its splits and the values of its dimension in all
// splits (attention_part writes them for padding tokens too), beside the
// token's position and sequence, so the merge costs one memory round trip.
// attention_merge_used merges only the splits attention_vec_pf16_*_used
// wrote: the first min(splits, ceil((p+1)/minPer)) of a token at position
// p, none of a token outside the cache (its zeros need none).
template <bool USED>
static __device__ __forceinline__ void attention_merge_body(const float *__restrict__ part, float *__restrict__ out,
                                                            const int *__restrict__ pos, const int *__restrict__ seq,
                                                            int heads, int headDim, int splits, int ctx, int maxSeqs,
                                                            int minPer) {
  __shared__ float f[ATT_MAX_SPLITS];
  __shared__ float red[32];
  grid_wait();
  const int b = blockIdx.x, h = blockIdx.y, s = seq[b], p = pos[b], d = threadIdx.x;
  float *o = out + ((size_t)b * heads + h) * headDim;
  const float *pt = part + ((size_t)b * heads + h) * splits * (headDim + 2);
  int used = splits;
  if constexpr (USED) used = s >= 0 && s < maxSeqs && p >= 0 && p < ctx ? min(splits, (p + minPer) / minPer) : 0;
  float pv[ATT_MAX_SPLITS];
#pragma unroll
  for (int i = 0; i < ATT_MAX_SPLITS; i++) pv[i] = d < headDim && i < used ? pt[i * (headDim + 2) + d] : 0.f;
  // Thread i holds the max and sum of splits i and i + blockDim.x.
  float mi[2], li[2];
#pragma unroll
  for (int k = 0; k < 2; k++) {
    const int i = d + k * blockDim.x;
    mi[k] = i < used ? pt[i * (headDim + 2) + headDim] : -INFINITY;
    li[k] = i < used ? pt[i * (headDim + 2) + headDim + 1] : 0.f;
  }
  if (s < 0 || s >= maxSeqs || p < 0 || p >= ctx) {
    if (d < headDim) o[d] = 0.f;
    return;
  }
  float m = fmaxf(mi[0], mi[1]);
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
  if ((d & 31) == 0) red[d >> 5] = m;
  __syncthreads();
  float M = -INFINITY;
  for (int w = 0; w < (int)(blockDim.x >> 5); w++) M = fmaxf(M, red[w]);
  __syncthreads();
  float l = 0.f;
#pragma unroll
  for (int k = 0; k < 2; k++) {
    const int i = d + k * blockDim.x;
    if (i < used) {
      const float fi = mi[k] == -INFINITY ? 0.f : expf(mi[k] - M);
      f[i] = fi;
      l += li[k] * fi;
    }
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) l += __shfl_xor_sync(0xffffffffu, l, off);
  if ((d & 31) == 0) red[d >> 5] = l;
  __syncthreads();
  float L = 0.f;
  for (int w = 0; w < (int)(blockDim.x >> 5); w++) L += red[w];
  if (d >= headDim) return;
  float v = 0.f;
#pragma unroll
  for (int i = 0; i < ATT_MAX_SPLITS; i++)
    if (i < used) v += pv[i] * f[i];
  o[d] = v / L;
  grid_launch(); // at the end, as in attention_part
}

extern "C" __global__ void attention_merge(const float *__restrict__ part, float *__restrict__ out,
                                           const int *__restrict__ pos, const int *__restrict__ seq, int heads,
                                           int headDim, int splits, int ctx, int maxSeqs) {
  attention_merge_body<false>(part, out, pos, seq, heads, headDim, splits, ctx, maxSeqs, 0);
}

extern "C" __global__ void attention_merge_used(const float *__restrict__ part, float *__restrict__ out,
                                                const int *__restrict__ pos, const int *__restrict__ seq, int heads,
                                                int headDim, int splits, int ctx, int maxSeqs, int minPer) {
  attention_merge_body<true>(part, out, pos, seq, heads, headDim, splits, ctx, maxSeqs, minPer);
}

// FlatStore is rope_store's writer for this file's cache: values i0 and
// i1 of KV head kvh at position pos[b] of slot seq[b], unless that is
// outside the cache (padding).
struct FlatStore {
  float *kc, *vc;       // the cache, [maxSeqs][ctx][kvdim] each
  const int *pos, *seq; // the tokens' positions and slots
  int ctx, maxSeqs;
  __device__ __forceinline__ void store(const float *__restrict__ v, int b, int kvh, int headDim, int kvdim, int i0,
                                        int i1, float a, float c) const {
    const int s = seq[b], p = pos[b];
    if (s < 0 || s >= maxSeqs || p < 0 || p >= ctx) return;
    const size_t at = ((size_t)s * ctx + p) * kvdim + (size_t)kvh * headDim;
    kc[at + i0] = a, kc[at + i1] = c;
    const float *vs = v + (size_t)b * kvdim + (size_t)kvh * headDim;
    vc[at + i0] = vs[i0], vc[at + i1] = vs[i1];
  }
};

// rope_store is rope_store.cuh's rope_store_head over this file's cache.
extern "C" __global__ void rope_store(float *q, const float *__restrict__ k, const float *__restrict__ v,
                                      float *kc, float *vc, const float *__restrict__ qn,
                                      const float *__restrict__ kn, const int *__restrict__ pos,
                                      const int *__restrict__ seq, const float *__restrict__ factors, int heads,
                                      int kvHeads, int headDim, int ropeDim, float base, int neox, float eps,
                                      float mscale, int ctx, int maxSeqs) {
  rope_store_head(q, k, v, qn, kn, pos, factors, heads, kvHeads, headDim, ropeDim, base, neox, eps, mscale,
                  FlatStore{kc, vc, pos, seq, ctx, maxSeqs});
}
