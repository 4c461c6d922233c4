// sample.cu: picking the next token where the logits are, so that only
// token ids go back to the host. One block of SAMPLE_THREADS threads per
// row of logits; the row's Pick says how:
//   - mode 0: the row is not picked (the host reads its logits);
//   - mode 1: greedy, the smallest index of the largest logit;
//   - mode 2: top-k, then top-p, then min-p, then temperature, in that
//     order (llama.cpp's default chain), and a draw with the host's uniform
//     number u: the first candidate whose cumulative weight passes
//     u * total, best candidates first when top-k or top-p sorted them,
//     in token order otherwise.
// Top-k and top-p work on the best SAMPLE_CAP candidates, found by a radix
// select (ties broken by the lower id) and sorted in shared memory. A row
// the block cannot pick (top-k above SAMPLE_CAP, or a top-p set that needs
// more than SAMPLE_CAP candidates) gets -1, and the host picks it from its
// logits with the same u.
#include <stdint.h>

#include "overlap.cuh"
#include "reduce.cuh"

#define SAMPLE_THREADS 1024
#define SAMPLE_CAP 1024
#define SAMPLE_WARPS (SAMPLE_THREADS / 32)

struct Pick {
  float temp;
  int topK;
  float topP, minP, u;
  int mode;
};

// okey maps a float to an unsigned key of the same order.
static __device__ __forceinline__ uint32_t okey(float f) {
  const uint32_t b = __float_as_uint(f);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

// better orders candidates: higher logit first, then lower id.
static __device__ __forceinline__ bool better(float la, int ia, float lb, int ib) {
  return la > lb || (la == lb && ia < ib);
}

static __device__ __forceinline__ float block_max(float v, float *red) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  __syncthreads();
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  float m = red[0];
  for (int w = 1; w < SAMPLE_WARPS; w++) m = fmaxf(m, red[w]);
  return m;
}

// block_scan returns the sum of v over the threads before this one (in
// thread order) and sets *total; scan is SAMPLE_WARPS floats of shared
// memory.
static __device__ __forceinline__ float block_scan(float v, float *scan, float *total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float inc = v;
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) {
    const float o = __shfl_up_sync(0xffffffffu, inc, off);
    if (lane >= off) inc += o;
  }
  float exc = __shfl_up_sync(0xffffffffu, inc, 1);
  if (lane == 0) exc = 0.f;
  __syncthreads();
  if (lane == 31) scan[warp] = inc;
  __syncthreads();
  float before = 0.f, all = 0.f;
  for (int w = 0; w < SAMPLE_WARPS; w++) {
    if (w < warp) before += scan[w];
    all += scan[w];
  }
  *total = all;
  return before + exc;
}

// argmax_row is the smallest index of the largest of the n values of x.
static __device__ __forceinline__ int argmax_row(const float *x, int n, float *redf, int *redi) {
  float best = -INFINITY;
  int idx = n;
  // Four values per load where the row allows, several loads in flight.
  const int n4 = ((uintptr_t)x & 15) == 0 ? n / 4 : 0;
#pragma unroll 8
  for (int i = threadIdx.x; i < n4; i += SAMPLE_THREADS) {
    const float4 v = __ldg((const float4 *)x + i);
    if (v.x > best) best = v.x, idx = 4 * i;
    if (v.y > best) best = v.y, idx = 4 * i + 1;
    if (v.z > best) best = v.z, idx = 4 * i + 2;
    if (v.w > best) best = v.w, idx = 4 * i + 3;
  }
  for (int i = 4 * n4 + threadIdx.x; i < n; i += SAMPLE_THREADS) {
    const float v = x[i];
    if (v > best || (v == best && i < idx)) best = v, idx = i;
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    const float ob = __shfl_xor_sync(0xffffffffu, best, off);
    const int oi = __shfl_xor_sync(0xffffffffu, idx, off);
    if (ob > best || (ob == best && oi < idx)) best = ob, idx = oi;
  }
  __syncthreads();
  if ((threadIdx.x & 31) == 0) redf[threadIdx.x >> 5] = best, redi[threadIdx.x >> 5] = idx;
  __syncthreads();
  best = redf[0], idx = redi[0];
  for (int w = 1; w < SAMPLE_WARPS; w++)
    if (redf[w] > best || (redf[w] == best && redi[w] < idx)) best = redf[w], idx = redi[w];
  return idx < n ? idx : 0;
}

// select_top puts the best c (≤ SAMPLE_CAP) of the n logits of x in
// cl/ci[0..c), best first; slots c..SAMPLE_CAP hold -inf.
static __device__ void select_top(const float *x, int n, int c, float *cl, int *ci, uint32_t *hist,
                                  float *scan) {
  // Radix select of the c-th largest key, 8 bits at a time from the top.
  __shared__ uint32_t prefixS, remainS;
  uint32_t prefix = 0, mask = 0;
  if (threadIdx.x == 0) remainS = c;
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int i = threadIdx.x; i < 256; i += SAMPLE_THREADS) hist[i] = 0;
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += SAMPLE_THREADS) {
      const uint32_t k = okey(x[i]);
      if ((k & mask) == prefix) atomicAdd(&hist[(k >> shift) & 255], 1u);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      uint32_t above = 0, remain = remainS;
      int d = 255;
      for (; d > 0; d--) {
        if (above + hist[d] >= remain) break;
        above += hist[d];
      }
      remainS = remain - above;
      prefixS = prefix | ((uint32_t)d << shift);
    }
    __syncthreads();
    prefix = prefixS, mask |= 255u << shift;
  }
  // Ordered compaction: thread t owns ids [t*per, (t+1)*per); every key
  // above the c-th is taken, and of the keys equal to it the first ones in
  // id order.
  const uint32_t kth = prefix;
  const int per = (n + SAMPLE_THREADS - 1) / SAMPLE_THREADS;
  const int lo = min(n, (int)threadIdx.x * per), hi = min(n, lo + per);
  int gt = 0, eq = 0;
  for (int i = lo; i < hi; i++) {
    const uint32_t k = okey(x[i]);
    gt += k > kth, eq += k == kth;
  }
  float gtAll, eqAll;
  int gtAt = (int)block_scan((float)gt, scan, &gtAll);
  int eqAt = (int)block_scan((float)eq, scan, &eqAll);
  const int need = c - (int)gtAll;
  for (int i = threadIdx.x; i < SAMPLE_CAP; i += SAMPLE_THREADS) cl[i] = -INFINITY, ci[i] = 0x7fffffff;
  __syncthreads();
  for (int i = lo; i < hi; i++) {
    const uint32_t k = okey(x[i]);
    if (k > kth) {
      cl[gtAt] = x[i], ci[gtAt] = i, gtAt++;
    } else if (k == kth) {
      if (eqAt < need) cl[(int)gtAll + eqAt] = x[i], ci[(int)gtAll + eqAt] = i;
      eqAt++;
    }
  }
  __syncthreads();
  // Bitonic sort, best first.
  for (int k = 2; k <= SAMPLE_CAP; k <<= 1) {
    for (int j = k >> 1; j > 0; j >>= 1) {
      for (int i = threadIdx.x; i < SAMPLE_CAP; i += SAMPLE_THREADS) {
        const int p = i ^ j;
        if (p > i) {
          const bool desc = (i & k) == 0;
          const bool swap = desc ? better(cl[p], ci[p], cl[i], ci[i]) : better(cl[i], ci[i], cl[p], ci[p]);
          if (swap) {
            const float tl = cl[i];
            const int ti = ci[i];
            cl[i] = cl[p], ci[i] = ci[p], cl[p] = tl, ci[p] = ti;
          }
        }
      }
      __syncthreads();
    }
  }
}

// pick_sorted draws from the first `kept` candidates (best first) at
// temperature temp with the uniform number u.
static __device__ int pick_sorted(const float *cl, const int *ci, int kept, float temp, float u, float *scan,
                                  int *result) {
  const int i = threadIdx.x;
  const float w = i < kept ? expf((cl[i] - cl[0]) / temp) : 0.f;
  float total;
  const float before = block_scan(w, scan, &total);
  const float target = u * total;
  if (threadIdx.x == 0) *result = -1;
  __syncthreads();
  if (i < kept && w > 0.f && before <= target && target < before + w) *result = ci[i];
  __syncthreads();
  if (*result >= 0) return *result;
  // Rounding left the target at or past the total: the last candidate
  // with any weight.
  __syncthreads();
  if (i < kept && w > 0.f && (i + 1 == kept || expf((cl[i + 1] - cl[0]) / temp) == 0.f)) atomicMax(result, ci[i]);
  __syncthreads();
  return *result >= 0 ? *result : ci[0];
}

// pick_ordered draws in token order over all n logits (no top-k or top-p):
// weights exp((l - max)/temp) for logits at or above the min-p cut.
static __device__ int pick_ordered(const float *x, int n, float mx, float cut, float temp, float u, float *scan,
                                   int *result) {
  const int per = (n + SAMPLE_THREADS - 1) / SAMPLE_THREADS;
  const int lo = min(n, (int)threadIdx.x * per), hi = min(n, lo + per);
  float local = 0.f;
  int last = -1;
  for (int i = lo; i < hi; i++) {
    if (x[i] >= cut) {
      const float w = expf((x[i] - mx) / temp);
      local += w;
      if (w > 0.f) last = i;
    }
  }
  float total;
  const float before = block_scan(local, scan, &total);
  const float target = u * total;
  if (threadIdx.x == 0) *result = -1;
  __syncthreads();
  if (local > 0.f && before <= target && target < before + local) {
    float cum = before;
    int got = last;
    for (int i = lo; i < hi; i++) {
      if (x[i] < cut) continue;
      cum += expf((x[i] - mx) / temp);
      if (target < cum) {
        got = i;
        break;
      }
    }
    *result = got;
  }
  __syncthreads();
  if (*result >= 0) return *result;
  __syncthreads();
  if (last >= 0) atomicMax(result, last);
  __syncthreads();
  return *result;
}

// sample: out[r] = the token picked from row r of logits (rows of n) with
// picks[r]; rows of mode 0 are left alone. Grid: one block per row.
extern "C" __global__ void __launch_bounds__(SAMPLE_THREADS)
    sample(const float *__restrict__ logits, int n, const Pick *__restrict__ picks, int *out) {
  __shared__ float cl[SAMPLE_CAP];
  __shared__ int ci[SAMPLE_CAP];
  __shared__ uint32_t hist[256];
  __shared__ float redf[SAMPLE_WARPS];
  __shared__ int redi[SAMPLE_WARPS];
  __shared__ int result;
  grid_begin();
  const int r = blockIdx.x;
  const Pick p = picks[r];
  const float *x = logits + (size_t)r * n;
  if (p.mode == 0) return;
  if (p.mode == 1 || !(p.temp > 0.f)) {
    const int id = argmax_row(x, n, redf, redi);
    if (threadIdx.x == 0) out[r] = id;
    return;
  }
  const bool topK = p.topK > 0 && p.topK < n;
  const bool topP = p.topP > 0.f && p.topP < 1.f;
  if (topK && p.topK > SAMPLE_CAP) {
    if (threadIdx.x == 0) out[r] = -1;
    return;
  }
  float m = -INFINITY;
  for (int i = threadIdx.x; i < n; i += SAMPLE_THREADS) m = fmaxf(m, x[i]);
  m = block_max(m, redf);
  const float cutOf = p.minP > 0.f ? logf(p.minP) : -INFINITY;
  if (!topK && !topP) {
    const int id = pick_ordered(x, n, m, m + cutOf, p.temp, p.u, redf, &result);
    if (threadIdx.x == 0) out[r] = id;
    return;
  }
  const int c = topK ? p.topK : min(n, SAMPLE_CAP);
  select_top(x, n, c, cl, ci, hist, redf);
  int kept = c;
  if (topP) {
    // Probabilities at temperature 1 over the top-k set, or over all
    // logits when there is no top-k.
    float z = 0.f;
    if (topK) {
      z = block_sum<SAMPLE_WARPS>(threadIdx.x < c ? expf(cl[threadIdx.x] - cl[0]) : 0.f, redf);
    } else {
      float s = 0.f;
      for (int i = threadIdx.x; i < n; i += SAMPLE_THREADS) s += expf(x[i] - m);
      z = block_sum<SAMPLE_WARPS>(s, redf);
    }
    const int i = threadIdx.x;
    const float w = i < c ? expf(cl[i] - cl[0]) / z : 0.f;
    float mass;
    const float before = block_scan(w, redf, &mass);
    if (threadIdx.x == 0) result = c;
    __syncthreads();
    if (i < c && before < p.topP && before + w >= p.topP) result = i + 1;
    __syncthreads();
    if (!topK && before + w < p.topP && i == c - 1) result = -1; // the cap holds too little mass
    __syncthreads();
    if (result < 0) {
      if (threadIdx.x == 0) out[r] = -1;
      return;
    }
    kept = result;
    __syncthreads();
  }
  if (p.minP > 0.f) {
    const float cut = cl[0] + cutOf;
    const int i = threadIdx.x;
    if (threadIdx.x == 0) result = 1;
    __syncthreads();
    if (i < kept && cl[i] >= cut) atomicMax(&result, i + 1);
    __syncthreads();
    kept = result;
    __syncthreads();
  }
  const int id = pick_sorted(cl, ci, kept, p.temp, p.u, redf, &result);
  if (threadIdx.x == 0) out[r] = id;
}
