// rope_store.cuh: the preparation of a step's heads for attention (head
// norm, rotation, cache write), written once for both caches: attention.cu
// instantiates it over the per-slot f32 cache (rope_store) and
// attention_paged.cu over the paged f16 pool (rope_store_pf16). The cache
// decides only how a key head and its value head are stored (the writer
// W); the norm and the rotation are one body.
#pragma once

#include "overlap.cuh"

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

// rope_store_head prepares token b's heads for attention: block (b, h)
// takes query head h (h < heads) or key head h - heads. The head is
// RMS-normalized with its norm weight first when one is given (qn for
// queries, kn for keys; headDim values), then its first ropeDim values are
// rotated by angle pos[b] * base^(-2i/ropeDim) / factors[i] for pair i
// (pairs (2i, 2i+1), or (i, i + ropeDim/2) when neox is set) and multiplied
// by mscale (LongRoPE's attention factor; 1 leaves them as rotated). Query heads
// are rotated in place; a key head is handed with the value head of the
// same index to w.store(v, b, kvh, headDim, kvdim, i0, i1, a, c): values
// i0 and i1 of KV head kvh are a and c (the key's, rotated) and those of
// token b's row of v, to be written to the token's cache cells unless it
// is padding.
// Grid (B, heads + kvHeads); headDim/2 threads rounded up to a multiple of
// 32: thread i holds pair i (the pairs past ropeDim/2 hold the values that
// are not rotated, two by two).
template <typename W>
static __device__ __forceinline__ void rope_store_head(float *q, const float *__restrict__ k,
                                                       const float *__restrict__ v, const float *__restrict__ qn,
                                                       const float *__restrict__ kn, const int *__restrict__ pos,
                                                       const float *__restrict__ factors, int heads, int kvHeads,
                                                       int headDim, int ropeDim, float base, int neox, float eps,
                                                       float mscale, const W &w) {
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
    a = a2 * mscale, c = c2 * mscale;
  }
  if (!isK) {
    float *dst = q + ((size_t)b * heads + h) * headDim;
    dst[i0] = a, dst[i1] = c;
    return;
  }
  w.store(v, b, kvh, headDim, kvdim, i0, i1, a, c);
}
