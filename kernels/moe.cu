// moe.cu: the products of an expert mixture's chosen experts for a few
// tokens (a decode step), on the 8-bit integer dot products of mvq.cu.
//
// moe_mvq_<TYPE>: slot i (grid y) of n = B·k slots is token i/k's
// (i%k)-th pick, expert e = pick[i]. Its input row xi = i/k (i with
// perSlot: the down projection of the slot's own gated values) is staged
// in shared memory as 8-bit values once per block (fused.cuh's stage_q8,
// the rounding of every quantized product), then each warp takes row
// pairs of expert e's matrix in turn: rows 2p and 2p+1 of W_e into y[i,
// 2p..2p+1], or, with a second matrix U (gate W, up U), row p of both into
// y[i, p] = act(W_e[p]·x)·(U_e[p]·x). Matrices are in the GGUF layout,
// rows rowBytes apart, W's experts expertBytes apart, U's upBytes.
// Only the chosen experts' rows are read, and the picks are read on the
// device, so one captured graph serves any routing.
#include "act.cuh"
#include "mvq_dot.cuh"

#define MOE_THREADS 256
#define MOE_WARPS_BLOCK (MOE_THREADS / 32)

template <int T>
static __device__ __forceinline__ void moe_mvq(const uint8_t *__restrict__ W, const uint8_t *__restrict__ U,
                                               long long rowBytes, long long expertBytes, long long upBytes,
                                               int rows, int cols,
                                               const float *__restrict__ x, const int *__restrict__ pick, int k,
                                               int perSlot, int act, float *__restrict__ y) {
  extern __shared__ int4 smem[];
  __shared__ float red[MOE_WARPS_BLOCK];
  const int i = blockIdx.y, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  grid_wait(); // the picks and x are written by the kernels ahead
  const int e = pick[i];
  const uint8_t *We = W + (size_t)e * expertBytes, *Ue = U + (size_t)e * upBytes;
  MVArgs a = {};
  a.x = x + (size_t)(perSlot ? i : i / k) * cols;
  a.cols = cols, a.B = 1;
  int4 *xq = smem;
  const float4 *xd = (const float4 *)(smem + xs16(cols));
  stage_q8<MOE_THREADS, true>(a, 0, 1, (uint32_t *)xq, (float2 *)xd, red);
  __syncthreads();
  const bool glu = U != nullptr;
  const int pairs = glu ? rows : rows / 2;
  float *yo = y + (size_t)i * rows;
  for (int p = blockIdx.x * MOE_WARPS_BLOCK + warp; p < pairs; p += gridDim.x * MOE_WARPS_BLOCK) {
    const uint8_t *ra = We + (size_t)(glu ? p : 2 * p) * rowBytes;
    const uint8_t *rb = glu ? Ue + (size_t)p * rowBytes : ra + rowBytes;
    float acc[2][1] = {{0.f}, {0.f}};
    row_pair<T, 1>(ra, rb, cols, 1, xq, xd, lane, 32, acc);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      acc[0][0] += __shfl_xor_sync(0xffffffffu, acc[0][0], o);
      acc[1][0] += __shfl_xor_sync(0xffffffffu, acc[1][0], o);
    }
    if (lane == 0) {
      if (glu) {
        yo[p] = glu_value(acc[0][0], acc[1][0], act);
      } else {
        yo[2 * p] = acc[0][0], yo[2 * p + 1] = acc[1][0];
      }
    }
  }
  grid_launch();
}

// MINB blocks per multiprocessor: 4 (64 registers) where the type's
// group fits them, 3 for Q5_K and Q6_K, whose groups spill at 64.
#define MOE_MVQ(NAME, T, MINB)                                                                                  \
  extern "C" __global__ void __launch_bounds__(MOE_THREADS, MINB)                                               \
      moe_mvq_##NAME(const uint8_t *W, const uint8_t *U, long long rowBytes, long long expertBytes,           \
                     long long upBytes, int rows, int cols, const float *x, const int *pick, int k, int perSlot,  \
                     int act, float *y) {                                                                       \
    moe_mvq<T>(W, U, rowBytes, expertBytes, upBytes, rows, cols, x, pick, k, perSlot, act, y);                \
  }

MOE_MVQ(Q8_0, T_Q8_0, 4)
MOE_MVQ(Q4_0, T_Q4_0, 4)
MOE_MVQ(Q4_K, T_Q4_K, 4)
MOE_MVQ(Q5_K, T_Q5_K, 3)
MOE_MVQ(Q6_K, T_Q6_K, 3)
