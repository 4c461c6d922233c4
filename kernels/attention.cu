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

// attention: out[b, h, :] = softmax(scale * q[b, h]·K[t]) over t ≤ pos[b]
// of V[t], K and V being the cache of seq[b] at KV head h / (heads/kvHeads).
// Grid (B, heads), ATT_WARPS warps; warp w takes positions w, w+ATT_WARPS,
// ... with an online softmax, then the warps' partial results are merged.
extern "C" __global__ void __launch_bounds__(32 * ATT_WARPS)
    attention(const float *__restrict__ q, const float *__restrict__ kc, const float *__restrict__ vc,
              float *__restrict__ out, const int *__restrict__ pos, const int *__restrict__ seq, int heads,
              int kvHeads, int headDim, int ctx, int maxSeqs, float scale) {
  __shared__ float sm[ATT_WARPS], sl[ATT_WARPS];
  __shared__ float sacc[ATT_WARPS][32 * ATT_MAXD];
  const int b = blockIdx.x, h = blockIdx.y;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int s = seq[b], p = pos[b];
  float *o = out + ((size_t)b * heads + h) * headDim;
  if (s < 0 || s >= maxSeqs || p < 0 || p >= ctx) {
    for (int d = threadIdx.x; d < headDim; d += blockDim.x) o[d] = 0.f;
    return;
  }
  const int kvdim = kvHeads * headDim;
  const int kvh = h / (heads / kvHeads);
  const float *qh = q + ((size_t)b * heads + h) * headDim;
  const float *K = kc + (size_t)s * ctx * kvdim + (size_t)kvh * headDim;
  const float *V = vc + (size_t)s * ctx * kvdim + (size_t)kvh * headDim;
  float qr[ATT_MAXD], acc[ATT_MAXD];
#pragma unroll
  for (int i = 0; i < ATT_MAXD; i++) {
    const int d = lane + 32 * i;
    qr[i] = d < headDim ? qh[d] * scale : 0.f;
    acc[i] = 0.f;
  }
  float m = -INFINITY, l = 0.f;
  for (int t = warp; t <= p; t += ATT_WARPS) {
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
  float L = 0.f, f[ATT_WARPS];
#pragma unroll
  for (int w = 0; w < ATT_WARPS; w++) {
    f[w] = sm[w] == -INFINITY ? 0.f : expf(sm[w] - M);
    L += sl[w] * f[w];
  }
  for (int d = threadIdx.x; d < headDim; d += blockDim.x) {
    float v = 0.f;
#pragma unroll
    for (int w = 0; w < ATT_WARPS; w++) v += sacc[w][d] * f[w];
    o[d] = v / L;
  }
}
