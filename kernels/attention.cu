// attention.cu: the KV cache write and attention over the cache for a
// batch of tokens, each token b at position pos[b] of sequence slot seq[b]
// (read from device memory, so a captured graph serves every step). A token
// with seq[b] < 0 is padding: it writes nothing to the cache and attends to
// nothing (its output is zero).
//
// Cache layout, per layer: [maxSeqs][ctx][kvHeads*headDim] f32.

#define ATT_WARPS 4
#define ATT_MAXD 8 // headDim ≤ 32*ATT_MAXD

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

// attention_part: for token b, head h and split s of the positions
// 0..pos[b] (split s covers the s-th of `splits` equal ranges), the
// online-softmax partial result over that range: the running max m, the
// sum l of exp(score - m) and the unnormalized weighted sum of V, written
// to part[((b*heads + h)*splits + s)*(headDim + 2) + ...] as
// acc[0..headDim), m, l. Grid (B, heads, splits), ATT_WARPS warps; warp w
// takes positions w, w+ATT_WARPS, ... of the range.
extern "C" __global__ void __launch_bounds__(32 * ATT_WARPS)
    attention_part(const float *__restrict__ q, const float *__restrict__ kc, const float *__restrict__ vc,
                   float *__restrict__ part, const int *__restrict__ pos, const int *__restrict__ seq, int heads,
                   int kvHeads, int headDim, int ctx, int maxSeqs, float scale) {
  __shared__ float sm[ATT_WARPS], sl[ATT_WARPS];
  __shared__ float sacc[ATT_WARPS][32 * ATT_MAXD];
  const int b = blockIdx.x, h = blockIdx.y, split = blockIdx.z, splits = gridDim.z;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int s = seq[b], p = pos[b];
  float *o = part + (((size_t)b * heads + h) * splits + split) * (headDim + 2);
  int t0 = 0, t1 = 0; // positions [t0, t1) of this split
  if (s >= 0 && s < maxSeqs && p >= 0 && p < ctx) {
    const int per = (p + splits) / splits; // ceil((p+1)/splits)
    t0 = min(split * per, p + 1);
    t1 = min(t0 + per, p + 1);
  }
  const int kvdim = kvHeads * headDim;
  const int kvh = h / (heads / kvHeads);
  const float *qh = q + ((size_t)b * heads + h) * headDim;
  const float *K = kc + ((size_t)max(s, 0) * ctx) * kvdim + (size_t)kvh * headDim;
  const float *V = vc + ((size_t)max(s, 0) * ctx) * kvdim + (size_t)kvh * headDim;
  float qr[ATT_MAXD], acc[ATT_MAXD];
#pragma unroll
  for (int i = 0; i < ATT_MAXD; i++) {
    const int d = lane + 32 * i;
    qr[i] = d < headDim && t1 > t0 ? qh[d] * scale : 0.f;
    acc[i] = 0.f;
  }
  float m = -INFINITY, l = 0.f;
  for (int t = t0 + warp; t < t1; t += ATT_WARPS) {
    const float *kt = K + (size_t)t * kvdim;
    float sc = 0.f;
#pragma unroll
    for (int i = 0; i < ATT_MAXD; i++) {
      const int d = lane + 32 * i;
      if (d < headDim) sc += qr[i] * kt[d];
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) sc += __shfl_xor_sync(0xffffffffu, sc, off);
    const float mn = fmaxf(m, sc);
    const float corr = expf(m - mn), e = expf(sc - mn);
    l = l * corr + e;
    const float *vt = V + (size_t)t * kvdim;
#pragma unroll
    for (int i = 0; i < ATT_MAXD; i++) {
      const int d = lane + 32 * i;
      acc[i] = acc[i] * corr + (d < headDim ? e * vt[d] : 0.f);
    }
    m = mn;
  }
  if (lane == 0) sm[warp] = m, sl[warp] = l;
#pragma unroll
  for (int i = 0; i < ATT_MAXD; i++) sacc[warp][lane + 32 * i] = acc[i];
  __syncthreads();
  float M = -INFINITY;
#pragma unroll
  for (int w = 0; w < ATT_WARPS; w++) M = fmaxf(M, sm[w]);
  float f[ATT_WARPS];
#pragma unroll
  for (int w = 0; w < ATT_WARPS; w++) f[w] = sm[w] == -INFINITY ? 0.f : expf(sm[w] - M);
  for (int d = threadIdx.x; d < headDim; d += blockDim.x) {
    float v = 0.f;
#pragma unroll
    for (int w = 0; w < ATT_WARPS; w++) v += sacc[w][d] * f[w];
    o[d] = v;
  }
  if (threadIdx.x == 0) {
    float L = 0.f;
#pragma unroll
    for (int w = 0; w < ATT_WARPS; w++) L += sl[w] * f[w];
    o[headDim] = M;
    o[headDim + 1] = L;
  }
}

// attention_merge: out[b, h, :] = the softmax-weighted sum of V over all
// positions, merged from the splits' partial results; zeros for padding
// tokens. Grid (B, heads), any block size.
extern "C" __global__ void attention_merge(const float *__restrict__ part, float *__restrict__ out,
                                           const int *__restrict__ pos, const int *__restrict__ seq, int heads,
                                           int headDim, int splits, int ctx, int maxSeqs) {
  const int b = blockIdx.x, h = blockIdx.y, s = seq[b], p = pos[b];
  float *o = out + ((size_t)b * heads + h) * headDim;
  if (s < 0 || s >= maxSeqs || p < 0 || p >= ctx) {
    for (int d = threadIdx.x; d < headDim; d += blockDim.x) o[d] = 0.f;
    return;
  }
  const float *pt = part + ((size_t)b * heads + h) * splits * (headDim + 2);
  float M = -INFINITY;
  for (int i = 0; i < splits; i++) M = fmaxf(M, pt[i * (headDim + 2) + headDim]);
  float L = 0.f;
  for (int i = 0; i < splits; i++) {
    const float m = pt[i * (headDim + 2) + headDim];
    if (m != -INFINITY) L += pt[i * (headDim + 2) + headDim + 1] * expf(m - M);
  }
  for (int d = threadIdx.x; d < headDim; d += blockDim.x) {
    float v = 0.f;
    for (int i = 0; i < splits; i++) {
      const float m = pt[i * (headDim + 2) + headDim];
      if (m != -INFINITY) v += pt[i * (headDim + 2) + d] * expf(m - M);
    }
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
