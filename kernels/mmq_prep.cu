// mmq_prep.cu: the input of the tensor-core products of a step of many
// tokens, rounded to 8 bits in blocks of 32 values exactly as mmq_quantize
// (mmq.cu) lays it out — batch rows of kpad int8 values, then batch rows
// of kpad/32 (d, d·Σq) pairs — from one of three sources, so that the
// product's input is read once and never written back as f32:
//   mode 0: x itself;
//   mode 1: x RMS-normalized and scaled by norm (as rms_norm in ops.cu);
//   mode 2: silu(x)·x2 (SwiGLU of the gate x and the up product x2).
#include <stdint.h>

#define PREP_THREADS 256

static __device__ __forceinline__ float prep_warp_sum(float v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// mmq_prep: grid (ceil(kpad/32 / (8·per)), batch rows), PREP_THREADS
// threads; each warp rounds per consecutive 32-value blocks of its row
// (one warp per block of a row, as mmq_quantize, so that a row's blocks are
// rounded side by side and not in turn). In mode 1 every block of a row
// first sums the row's squares (the same order in each, so one scale).
extern "C" __global__ void __launch_bounds__(PREP_THREADS) mmq_prep(const float *__restrict__ x, const float *__restrict__ x2,
                                                                    const float *__restrict__ norm, int8_t *__restrict__ xq,
                                                                    float2 *__restrict__ xd, int cols, int kpad, float eps,
                                                                    int mode, int per) {
  const int b = blockIdx.y, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const float *xr = x + (size_t)b * cols;
  const float *ur = x2 + (size_t)b * cols;
  float scale = 1.0f;
  if (mode == 1) {
    __shared__ float part[PREP_THREADS / 32];
    float ss = 0.f;
    for (int i = threadIdx.x; i < cols; i += PREP_THREADS) ss += xr[i] * xr[i];
    ss = prep_warp_sum(ss);
    if (lane == 0) part[warp] = ss;
    __syncthreads();
    ss = lane < PREP_THREADS / 32 ? part[lane] : 0.f;
    ss = prep_warp_sum(ss);
    scale = rsqrtf(ss / cols + eps);
  }
  const int nblk = kpad / 32, first = (blockIdx.x * (PREP_THREADS / 32) + warp) * per;
  const int last = min(first + per, nblk);
#pragma unroll 4
  for (int blk = first; blk < last; blk++) {
    const int k = blk * 32 + lane;
    float v = 0.0f;
    if (k < cols) {
      v = xr[k];
      if (mode == 1) {
        v = v * scale * norm[k];
      } else if (mode == 2) {
        v = v / (1.f + expf(-v)) * ur[k];
      }
    }
    float amax = fabsf(v);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    const float d = amax / 127.0f;
    const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
    const int q = __float2int_rn(v * id);
    xq[(size_t)b * kpad + k] = (int8_t)q;
    int sum = q;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (lane == 0) xd[(size_t)b * nblk + blk] = make_float2(d, d * (float)sum);
  }
}
