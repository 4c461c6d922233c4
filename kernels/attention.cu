// attention.cu: the KV cache write and attention over the cache for a
// batch of tokens, each token b at position pos[b] of sequence slot seq[b]
// (read from device memory, so a captured graph serves every step). A token
// with seq[b] < 0 is padding: it writes nothing to the cache and attends to
// nothing (its output is zero).
//
// Cache layout, per layer: [maxSeqs][ctx][kvHeads*headDim] f32.

#define ATT_THREADS 128
#define ATT_MAXD 8 // headDim ≤ 32*ATT_MAXD
#define ATT_MAXG 8 // query heads per KV head
#define ATT_SLOTS (ATT_MAXG * 32 * ATT_MAXD / ATT_THREADS)
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

// attention_part: for token b, KV head kvh and split s of the positions
// 0..pos[b] (split s covers the s-th of `splits` equal ranges), the
// online-softmax partial result of each of the G = heads/kvHeads query
// heads that share the KV head over that range: the running max m, the sum
// l of exp(score - m) and the unnormalized weighted sum of V, written to
// part[((b*heads + h)*splits + s)*(headDim + 2) + ...] as acc[0..headDim),
// m, l. Grid (B, kvHeads, splits), ATT_THREADS threads.
//
// The range is walked in tiles of ATT_THREADS positions: each thread
// computes the G scores of one position (its K row read once for all G
// heads, every load independent of the others), one warp per head turns a
// tile's scores into weights, and each thread accumulates weights times V
// for its (head, dimension) slots, again with independent loads.
extern "C" __global__ void __launch_bounds__(ATT_THREADS)
    attention_part(const float *__restrict__ q, const float *__restrict__ kc, const float *__restrict__ vc,
                   float *__restrict__ part, const int *__restrict__ pos, const int *__restrict__ seq, int heads,
                   int kvHeads, int headDim, int ctx, int maxSeqs, float scale) {
  __shared__ __align__(16) float qs[ATT_MAXG * 32 * ATT_MAXD]; // read as float4
  __shared__ float sc[ATT_MAXG][ATT_THREADS];
  __shared__ float mS[ATT_MAXG], lS[ATT_MAXG], corrS[ATT_MAXG];
  const int b = blockIdx.x, kvh = blockIdx.y, split = blockIdx.z, splits = gridDim.z;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int G = heads / kvHeads, kvdim = kvHeads * headDim;
  const int s = seq[b], p = pos[b];
  int t0 = 0, t1 = 0; // positions [t0, t1) of this split
  if (s >= 0 && s < maxSeqs && p >= 0 && p < ctx) {
    const int per = (p + splits) / splits; // ceil((p+1)/splits)
    t0 = min(split * per, p + 1);
    t1 = min(t0 + per, p + 1);
  }
  const float *qh = q + ((size_t)b * heads + (size_t)kvh * G) * headDim;
  for (int i = tid; i < G * headDim; i += ATT_THREADS) qs[i] = qh[i] * scale;
  if (tid < G) mS[tid] = -INFINITY, lS[tid] = 0.f;
  const float *K = kc + (size_t)max(s, 0) * ctx * kvdim + (size_t)kvh * headDim;
  const float *V = vc + (size_t)max(s, 0) * ctx * kvdim + (size_t)kvh * headDim;
  const int slots = G * headDim; // (head, dimension) pairs, ATT_SLOTS at most per thread
  float acc[ATT_SLOTS];
#pragma unroll
  for (int k = 0; k < ATT_SLOTS; k++) acc[k] = 0.f;
  __syncthreads();
  for (int tt = t0; tt < t1; tt += ATT_THREADS) {
    const int t = tt + tid;
    float sg[ATT_MAXG];
#pragma unroll
    for (int g = 0; g < ATT_MAXG; g++) sg[g] = 0.f;
    if (t < t1) {
      const float4 *kr = (const float4 *)(K + (size_t)t * kvdim);
#pragma unroll 16
      for (int i = 0; i < headDim / 4; i++) {
        const float4 k4 = __ldg(kr + i);
#pragma unroll
        for (int g = 0; g < ATT_MAXG; g++) {
          if (g < G) {
            const float4 q4 = *(const float4 *)(qs + g * headDim + 4 * i);
            sg[g] += q4.x * k4.x + q4.y * k4.y + q4.z * k4.z + q4.w * k4.w;
          }
        }
      }
    }
#pragma unroll
    for (int g = 0; g < ATT_MAXG; g++)
      if (g < G) sc[g][tid] = t < t1 ? sg[g] : -INFINITY;
    __syncthreads();
    for (int g = warp; g < G; g += ATT_THREADS / 32) {
      float m = -INFINITY;
      for (int j = lane; j < ATT_THREADS; j += 32) m = fmaxf(m, sc[g][j]);
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
      const float mOld = mS[g], mNew = fmaxf(mOld, m);
      float sum = 0.f;
      for (int j = lane; j < ATT_THREADS; j += 32) {
        const float e = sc[g][j] == -INFINITY ? 0.f : expf(sc[g][j] - mNew);
        sc[g][j] = e;
        sum += e;
      }
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
      if (lane == 0) {
        const float corr = mOld == -INFINITY ? 0.f : expf(mOld - mNew);
        corrS[g] = corr, lS[g] = lS[g] * corr + sum, mS[g] = mNew;
      }
    }
    __syncthreads();
    const int n = min(ATT_THREADS, t1 - tt);
#pragma unroll
    for (int k = 0; k < ATT_SLOTS; k++) {
      const int idx = tid + k * ATT_THREADS;
      if (idx < slots) {
        const int g = idx / headDim, d = idx - g * headDim;
        const float *vp = V + (size_t)tt * kvdim + d;
        float a = acc[k] * corrS[g];
#pragma unroll 8
        for (int j = 0; j < n; j++) a += sc[g][j] * __ldg(vp + (size_t)j * kvdim);
        acc[k] = a;
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int k = 0; k < ATT_SLOTS; k++) {
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
}

// attention_merge: out[b, h, :] = the softmax-weighted sum of V over all
// positions, merged from the splits' partial results; zeros for padding
// tokens. Grid (B, heads), any block size of at most ATT_MERGE threads
// (a multiple of 32). The splits' maxima and sums are read at once, one
// per thread, then each thread sums its dimensions over the splits with
// independent loads.
extern "C" __global__ void attention_merge(const float *__restrict__ part, float *__restrict__ out,
                                           const int *__restrict__ pos, const int *__restrict__ seq, int heads,
                                           int headDim, int splits, int ctx, int maxSeqs) {
  __shared__ float f[ATT_MAX_SPLITS];
  __shared__ float red[32];
  const int b = blockIdx.x, h = blockIdx.y, s = seq[b], p = pos[b];
  float *o = out + ((size_t)b * heads + h) * headDim;
  if (s < 0 || s >= maxSeqs || p < 0 || p >= ctx) {
    for (int d = threadIdx.x; d < headDim; d += blockDim.x) o[d] = 0.f;
    return;
  }
  const float *pt = part + ((size_t)b * heads + h) * splits * (headDim + 2);
  float m = -INFINITY, l = 0.f;
  for (int i = threadIdx.x; i < splits; i += blockDim.x) m = fmaxf(m, pt[i * (headDim + 2) + headDim]);
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = m;
  __syncthreads();
  float M = -INFINITY;
  for (int w = 0; w < (int)(blockDim.x >> 5); w++) M = fmaxf(M, red[w]);
  __syncthreads();
  for (int i = threadIdx.x; i < splits; i += blockDim.x) {
    const float mi = pt[i * (headDim + 2) + headDim];
    f[i] = mi == -INFINITY ? 0.f : expf(mi - M);
    l += pt[i * (headDim + 2) + headDim + 1] * f[i];
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) l += __shfl_xor_sync(0xffffffffu, l, off);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = l;
  __syncthreads();
  float L = 0.f;
  for (int w = 0; w < (int)(blockDim.x >> 5); w++) L += red[w];
  for (int d = threadIdx.x; d < headDim; d += blockDim.x) {
    float v = 0.f;
#pragma unroll 8
    for (int i = 0; i < splits; i++) v += pt[i * (headDim + 2) + d] * f[i];
    o[d] = v / L;
  }
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
