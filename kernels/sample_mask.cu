// sample_mask.cu: a constraint's mask applied to the rows that sample.cu
// picks, launched right before sample (Device.SampleMasked). One block of
// MASK_THREADS threads per row of logits. A row whose flag is set has its
// mask (one bit per token: bit i%64 of word i/64) applied in place: every
// token it does not allow gets -Inf, a NaN -Inf and +Inf the largest float,
// as the host's constrained pick reads them, so that sample's greedy and
// top-k / top-p / min-p / temperature chain then picks among the allowed
// tokens only. A row where no allowed token is left finite gets -1, and
// mode 0 in its copy of the picks so that sample leaves it alone. Every
// row's pick is copied to picksOut, the picks sample reads; the step's
// inputs are not written.
#include <float.h>
#include <stdint.h>

#include "overlap.cuh"

#define MASK_THREADS 1024
#define MASK_PICK_WORDS 6 // sizeof(struct Pick) / 4 in sample.cu
#define MASK_PICK_MODE 5  // the word of Pick.mode

// masked is logit v as the constrained pick reads it: -Inf where the mask
// bans the token or v is NaN, the largest float for +Inf.
static __device__ __forceinline__ float masked(float v, bool allowed) {
  if (!allowed || v != v) return -INFINITY;
  return fminf(v, FLT_MAX);
}

static __device__ __forceinline__ bool same(float a, float b) { return __float_as_uint(a) == __float_as_uint(b); }

// sample_mask: rows r with flags[r] != 0 get masks[r*words ..] applied to
// logits[r*n ..]; picksOut[r] = picks[r] for every row, with mode 0 and
// out[r] = -1 where the mask leaves no finite logit. Grid: one block per
// row; words ≥ (n+63)/64.
extern "C" __global__ void __launch_bounds__(MASK_THREADS)
    sample_mask(float *logits, int n, const uint32_t *__restrict__ picks, const int *__restrict__ flags,
                const unsigned long long *__restrict__ masks, int words, uint32_t *__restrict__ picksOut,
                int *__restrict__ out) {
  grid_begin();
  const int r = blockIdx.x;
  if (threadIdx.x < MASK_PICK_WORDS)
    picksOut[r * MASK_PICK_WORDS + threadIdx.x] = picks[r * MASK_PICK_WORDS + threadIdx.x];
  if (flags[r] == 0) return; // the whole block returns: no barrier below is split
  float *x = logits + (size_t)r * n;
  const unsigned long long *m = masks + (size_t)r * words;
  int alive = 0;
  // Four logits per load where the row allows: the four bits of float4 i
  // are bits 4i%64 .. 4i%64+3 of word 4i/64 = i/16.
  const int n4 = ((uintptr_t)x & 15) == 0 ? n / 4 : 0;
  for (int i = threadIdx.x; i < n4; i += MASK_THREADS) {
    const uint32_t b = (uint32_t)(m[i >> 4] >> ((4 * i) & 63)) & 15u;
    const float4 v = ((const float4 *)x)[i];
    const float4 w = make_float4(masked(v.x, b & 1u), masked(v.y, b & 2u), masked(v.z, b & 4u), masked(v.w, b & 8u));
    alive |= (w.x > -INFINITY) | (w.y > -INFINITY) | (w.z > -INFINITY) | (w.w > -INFINITY);
    if (!same(v.x, w.x) || !same(v.y, w.y) || !same(v.z, w.z) || !same(v.w, w.w)) ((float4 *)x)[i] = w;
  }
  for (int i = 4 * n4 + threadIdx.x; i < n; i += MASK_THREADS) {
    const float v = x[i];
    const float w = masked(v, (m[i >> 6] >> (i & 63)) & 1ull);
    alive |= w > -INFINITY;
    if (!same(v, w)) x[i] = w;
  }
  // The barrier also orders thread MASK_PICK_MODE's copy of the mode
  // before thread 0's overwrite.
  if (!__syncthreads_or(alive) && threadIdx.x == 0) {
    picksOut[r * MASK_PICK_WORDS + MASK_PICK_MODE] = 0;
    out[r] = -1;
  }
}
