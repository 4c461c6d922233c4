// attention.cu: the KV cache write and attention over the cache for a
// batch of tokens, each token b at position pos[b] of sequence slot seq[b]
// (read from device memory, so a captured graph serves every step). A token
// with seq[b] < 0 is padding: it writes nothing to the cache and attends to
// nothing (its output is zero).
//
// Cache layout, per layer: [maxSeqs][ctx][kvHeads*headDim] f32.

#include "overlap.cuh"

#define ATT_THREADS 128
#define ATT_MAXG 8 // query heads per KV head
#define ATT_MAX_SPLITS 64 // attentionSplits in attention_cuda.go stays at or below
#define ATT_TILE 32       // positions per tile of attention_part at most (one per lane)

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

// cp_async16 copies 16 bytes from global to shared memory without
// passing through registers (sm_80 and newer); cp_async_wait waits for
// every copy this thread issued.
static __device__ __forceinline__ void cp_async16(void *dst, const void *src) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(src));
}
static __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;" ::: "memory");
}

// attention_part: for token b, KV head kvh and split s of the positions
// 0..pos[b] (split s covers the s-th of `splits` equal ranges), the
// online-softmax partial result of each of the G = heads/kvHeads query
// heads that share the KV head over that range: the running max m, the sum
// l of exp(score - m) and the unnormalized weighted sum of V, written to
// part[((b*heads + h)*splits + s)*(headDim + 2) + ...] as acc[0..headDim),
// m, l. Grid (B, kvHeads, splits), ATT_THREADS threads, attShared(tile)
// bytes of dynamic shared memory.
//
// The range is walked in tiles of `tile` (≤ 32) positions. A tile's K and
// V rows are copied to shared memory all at once (cp.async), so a tile
// costs one memory round trip; the first tile's copies are issued before
// the queries are staged, and in a single-token step before the kernel
// waits for the one ahead (all but the token's own row, which that kernel
// writes). Then each thread computes scores of (head,
// position) pairs, one warp per head turns a tile's scores into weights
// (one position per lane), and each thread accumulates weights times V for
// its (head, dimension) slots.
//
// attention_part_<S> holds S (head, dimension) slots per thread: the
// smallest of 2, 4, 8 and 16 with S*ATT_THREADS ≥ G*headDim, so the
// kernel's code holds no unused slots.
template <int S>
static __device__ __forceinline__ void attention_part(const float *__restrict__ q, const float *__restrict__ kc,
                                                      const float *__restrict__ vc, float *__restrict__ part,
                                                      const int *__restrict__ pos, const int *__restrict__ seq,
                                                      int heads, int kvHeads, int headDim, int ctx, int maxSeqs,
                                                      float scale, int tile) {
  extern __shared__ __align__(16) float att_smem[];
  __shared__ float mS[ATT_MAXG], lS[ATT_MAXG], corrS[ATT_MAXG];
  const int b = blockIdx.x, kvh = blockIdx.y, split = blockIdx.z, splits = gridDim.z;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int G = heads / kvHeads, kvdim = kvHeads * headDim, hd4 = headDim >> 2, pitch = headDim + 4;
  float *ks = att_smem;               // tile × pitch: K rows, padded so rows start on other banks
  float *vs = ks + tile * pitch;      // tile × headDim: V rows
  float *qs = vs + tile * headDim;    // G × headDim: the queries, scaled
  float *sc = qs + G * headDim;       // G × tile: scores, then weights
  const int s = seq[b], p = pos[b]; // only host copies write them
  int t0 = 0, t1 = 0; // positions [t0, t1) of this split
  if (s >= 0 && s < maxSeqs && p >= 0 && p < ctx) {
    const int per = (p + splits) / splits; // ceil((p+1)/splits)
    t0 = min(split * per, p + 1);
    t1 = min(t0 + per, p + 1);
  }
  const float *K = kc + (size_t)max(s, 0) * ctx * kvdim + (size_t)kvh * headDim;
  const float *V = vc + (size_t)max(s, 0) * ctx * kvdim + (size_t)kvh * headDim;
  // fetch issues the copies of the K and V rows tt+j of a tile starting at
  // position tt, for j in [lo, hi) but j == skip.
  auto fetch = [&](int tt, int lo, int hi, int skip) {
    for (int c = lo * hd4 + tid; c < hi * hd4; c += ATT_THREADS) {
      const int j = c / hd4, e = 4 * (c - j * hd4);
      if (j == skip) continue;
      cp_async16(ks + j * pitch + e, K + (size_t)(tt + j) * kvdim + e);
      cp_async16(vs + j * headDim + e, V + (size_t)(tt + j) * kvdim + e);
    }
  };
  // A step of one token writes only its own position of the cache, in the
  // kernel ahead: the first tile's other rows are copied before waiting
  // for it (launched to overlap, the copies then run during its last
  // blocks), that row after.
  const int n0 = min(tile, t1 - t0);
  const bool early = gridDim.x == 1;
  if (early && t0 < t1) fetch(t0, 0, n0, p - t0);
  grid_wait();
  if (t0 < t1) {
    if (!early) {
      fetch(t0, 0, n0, -1);
    } else if (p < t0 + n0) {
      fetch(t0, p - t0, p - t0 + 1, -1);
    }
  }
  const float *qh = q + ((size_t)b * heads + (size_t)kvh * G) * headDim;
  for (int i = tid; i < G * headDim; i += ATT_THREADS) qs[i] = qh[i] * scale;
  if (tid < G) mS[tid] = -INFINITY, lS[tid] = 0.f;
  const int slots = G * headDim; // (head, dimension) pairs, S at most per thread
  float acc[S];
#pragma unroll
  for (int k = 0; k < S; k++) acc[k] = 0.f;
  for (int tt = t0; tt < t1; tt += tile) {
    const int n = min(tile, t1 - tt);
    cp_async_wait();
    __syncthreads();
    for (int idx = tid; idx < G * n; idx += ATT_THREADS) {
      const int g = idx / n, j = idx - g * n;
      const float4 *qv = (const float4 *)(qs + g * headDim), *kv = (const float4 *)(ks + j * pitch);
      float d = 0.f;
#pragma unroll 8
      for (int i = 0; i < hd4; i++) {
        const float4 x = qv[i], y = kv[i];
        d += x.x * y.x + x.y * y.y + x.z * y.z + x.w * y.w;
      }
      sc[g * tile + j] = d;
    }
    __syncthreads();
    for (int g = warp; g < G; g += ATT_THREADS / 32) {
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
      const int idx = tid + k * ATT_THREADS;
      if (idx < slots) {
        const int g = idx / headDim, d = idx - g * headDim;
        const float *w = sc + g * tile;
        float a = acc[k] * corrS[g];
        for (int j = 0; j < n; j++) a += w[j] * vs[j * headDim + d];
        acc[k] = a;
      }
    }
    __syncthreads();
    if (tt + tile < t1) fetch(tt + tile, 0, min(tile, t1 - tt - tile), -1);
  }
#pragma unroll
  for (int k = 0; k < S; k++) {
    const int idx = tid + k * ATT_THREADS;
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
  // The next kernel may start only as this one's blocks end: started at
  // once (grid_begin), an overlapping merge and output product cost 8B
  // Q8_0 a quarter of its speed at position 512 (253 against 334 tok/s).
  grid_launch();
}

#define ATTENTION_PART(S)                                                                            \
  extern "C" __global__ void __launch_bounds__(ATT_THREADS)                                          \
      attention_part_##S(const float *__restrict__ q, const float *__restrict__ kc,                  \
                         const float *__restrict__ vc, float *__restrict__ part,                     \
                         const int *__restrict__ pos, const int *__restrict__ seq, int heads,        \
                         int kvHeads, int headDim, int ctx, int maxSeqs, float scale, int tile) {    \
    attention_part<S>(q, kc, vc, part, pos, seq, heads, kvHeads, headDim, ctx, maxSeqs, scale, tile); \
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
extern "C" __global__ void attention_merge(const float *__restrict__ part, float *__restrict__ out,
                                           const int *__restrict__ pos, const int *__restrict__ seq, int heads,
                                           int headDim, int splits, int ctx, int maxSeqs) {
  __shared__ float f[ATT_MAX_SPLITS];
  __shared__ float red[32];
  grid_wait();
  const int b = blockIdx.x, h = blockIdx.y, s = seq[b], p = pos[b], d = threadIdx.x;
  float *o = out + ((size_t)b * heads + h) * headDim;
  const float *pt = part + ((size_t)b * heads + h) * splits * (headDim + 2);
  float pv[ATT_MAX_SPLITS];
#pragma unroll
  for (int i = 0; i < ATT_MAX_SPLITS; i++) pv[i] = d < headDim && i < splits ? pt[i * (headDim + 2) + d] : 0.f;
  // Thread i holds the max and sum of splits i and i + blockDim.x.
  float mi[2], li[2];
#pragma unroll
  for (int k = 0; k < 2; k++) {
    const int i = d + k * blockDim.x;
    mi[k] = i < splits ? pt[i * (headDim + 2) + headDim] : -INFINITY;
    li[k] = i < splits ? pt[i * (headDim + 2) + headDim + 1] : 0.f;
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
    if (i < splits) {
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
    if (i < splits) v += pv[i] * f[i];
  o[d] = v / L;
  grid_launch(); // at the end, as in attention_part
}

// head_sum adds v over the block (blockDim.x a multiple of 32, ≤ 256).
static __device__ __forceinline__ float head_sum(float v) {
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

// rope_store prepares token b's heads for attention in one launch: block
// (b, h) takes query head h (h < heads) or key head h - heads. The head is
// RMS-normalized with its norm weight first when one is given (qn for
// queries, kn for keys; headDim values), then its first ropeDim values are
// rotated by angle pos[b] * base^(-2i/ropeDim) / factors[i] for pair i
// (pairs (2i, 2i+1), or (i, i + ropeDim/2) when neox is set). Query heads
// are rotated in place; key heads, and the value head of the same index,
// are written to the cache at position pos[b] of sequence seq[b] unless
// that is padding. Grid (B, heads + kvHeads); headDim/2 threads rounded up
// to a multiple of 32: thread i holds pair i (the pairs past ropeDim/2
// hold the values that are not rotated, two by two).
extern "C" __global__ void rope_store(float *q, const float *__restrict__ k, const float *__restrict__ v,
                                      float *kc, float *vc, const float *__restrict__ qn,
                                      const float *__restrict__ kn, const int *__restrict__ pos,
                                      const int *__restrict__ seq, const float *__restrict__ factors, int heads,
                                      int kvHeads, int headDim, int ropeDim, float base, int neox, float eps,
                                      int ctx, int maxSeqs) {
  grid_begin();
  const int b = blockIdx.x, h = blockIdx.y, i = threadIdx.x;
  const bool isK = h >= heads;
  const int kvh = h - heads, kvdim = kvHeads * headDim;
  const float *src = isK ? k + (size_t)b * kvdim + (size_t)kvh * headDim : q + ((size_t)b * heads + h) * headDim;
  const float *nw = isK ? kn : qn;
  const bool active = 2 * i < headDim;
  const bool rot = 2 * i < ropeDim;
  int i0, i1;
  if (rot) {
    i0 = neox ? i : 2 * i, i1 = neox ? i + ropeDim / 2 : 2 * i + 1;
  } else {
    i0 = ropeDim + 2 * (i - ropeDim / 2), i1 = i0 + 1;
  }
  float a = active ? src[i0] : 0.f, c = active ? src[i1] : 0.f;
  if (nw != nullptr) {
    const float s = 1.f / sqrtf(head_sum(a * a + c * c) / (float)headDim + eps);
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
  const int s = seq[b], p = pos[b];
  if (s < 0 || s >= maxSeqs || p < 0 || p >= ctx) return;
  const size_t at = ((size_t)s * ctx + p) * kvdim + (size_t)kvh * headDim;
  kc[at + i0] = a, kc[at + i1] = c;
  const float *vs = v + (size_t)b * kvdim + (size_t)kvh * headDim;
  vc[at + i0] = vs[i0], vc[at + i1] = vs[i1];
}
