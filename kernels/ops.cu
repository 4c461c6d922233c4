// ops.cu: element-wise and per-row kernels of a decode step over f32
// activations: RMSNorm, bias add, residual add and SwiGLU.
#include "overlap.cuh"
#include <stdint.h>

static __device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// block_sum adds v over the block (blockDim.x a multiple of 32, ≤ 1024);
// every thread gets the total.
static __device__ __forceinline__ float block_sum(float v) {
  __shared__ float part[32];
  v = warp_sum(v);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = blockDim.x >> 5;
  __syncthreads();
  if (lane == 0) part[warp] = v;
  __syncthreads();
  v = lane < nw ? part[lane] : 0.f;
  return warp_sum(v);
}

// rms_row normalizes row blockIdx.x of x (n values): out[i] = x[i] /
// sqrt(mean(x²) + eps) * w[i], or with ADD out[i] += that (rounded before
// the add, as a norm into a buffer then an add would round it). A row of
// at most RMS_HOLD values a thread (normThreads sizes the block so) is read
// once into registers, all of a thread's loads in flight together; a longer
// one is read twice. Both sum a thread's squares in the same order.
#define RMS_HOLD 4
template <bool ADD>
static __device__ __forceinline__ void rms_row(const float *x, const float *__restrict__ w, float *out, int n,
                                               float eps) {
  const float *xr = x + (size_t)blockIdx.x * n;
  float *o = out + (size_t)blockIdx.x * n;
  float ss = 0.f;
  if (n <= RMS_HOLD * (int)blockDim.x) {
    float v[RMS_HOLD];
#pragma unroll
    for (int r = 0; r < RMS_HOLD; r++) {
      const int i = threadIdx.x + r * blockDim.x;
      v[r] = i < n ? xr[i] : 0.f;
    }
#pragma unroll
    for (int r = 0; r < RMS_HOLD; r++) {
      if (threadIdx.x + r * blockDim.x < n) ss += v[r] * v[r];
    }
    ss = block_sum(ss);
    const float s = rsqrtf(ss / n + eps);
#pragma unroll
    for (int r = 0; r < RMS_HOLD; r++) {
      const int i = threadIdx.x + r * blockDim.x;
      if (i < n) {
        if constexpr (ADD) {
          o[i] += __fmul_rn(v[r] * s, w[i]);
        } else {
          o[i] = v[r] * s * w[i];
        }
      }
    }
    return;
  }
  for (int i = threadIdx.x; i < n; i += blockDim.x) ss += xr[i] * xr[i];
  ss = block_sum(ss);
  const float s = rsqrtf(ss / n + eps);
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    if constexpr (ADD) {
      o[i] += __fmul_rn(xr[i] * s, w[i]);
    } else {
      o[i] = xr[i] * s * w[i];
    }
  }
}

// rms_norm: out[r, i] = x[r, i] / sqrt(mean(x[r, :]²) + eps) * w[i]; one
// block per row of n; out may be x.
extern "C" __global__ void rms_norm(const float *x, const float *__restrict__ w, float *out, int n, float eps) {
  rms_row<false>(x, w, out, n, eps);
}

// rms_norm_add: y[r, i] += x[r, i] / sqrt(mean(x[r, :]²) + eps) * w[i]
// (a norm after a product, then the residual add), to the bits of rms_norm
// followed by add; one block per row of n; x and y are distinct.
// Launched to overlap the kernel ahead (the product whose output it
// normalizes): it waits for that kernel, then lets the next one start at
// once, so the next product's launch runs beside this short kernel.
extern "C" __global__ void rms_norm_add(const float *x, const float *__restrict__ w, float *y, int n, float eps) {
  grid_begin();
  rms_row<true>(x, w, y, n, eps);
}

// add_bias: y[i] += bias[i % n] for i < total.
extern "C" __global__ void add_bias(float *y, const float *__restrict__ bias, int n, int total) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < total) y[i] += bias[i % n];
}

// add: y[i] += x[i] for i < total.
extern "C" __global__ void add(float *y, const float *__restrict__ x, int total) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < total) y[i] += x[i];
}

// swiglu: out[i] = silu(gate[i]) * up[i]; out may be gate or up.
extern "C" __global__ void swiglu(const float *gate, const float *up, float *out, int total) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < total) {
    const float g = gate[i];
    out[i] = g / (1.f + expf(-g)) * up[i];
  }
}
