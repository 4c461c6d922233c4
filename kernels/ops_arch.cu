// ops_arch.cu: the kernels of the steps the architecture description adds
// to the llama block, for the GPU executor of that description: gated
// feed-forward with SiLU or GELU (tanh) over plain or strided inputs,
// scale, soft-cap, column copy (the split of a fused product), the expert
// mixture's routing, its products for the chosen experts only, its
// weighted sums and the gather and sum of its rows grouped by expert
// (attention with a logit scale, soft-capping and a sliding window is
// attention.cu's attention_part). None is launched to overlap the
// kernel ahead (none calls grid_wait), so each starts once that kernel has
// finished.
#include "act.cuh"
#include "fused.cuh"

#define ARCH_MOE_MAXK 32    // MaxExpertsUsed in ops_arch_cuda.go

// glu_act: out[r, c] = act(g[r*gStride + c]) * u[r*uStride + c] for r <
// rows, c < f; act 0 is SiLU, 1 GELU (tanh). out (rows × f) may be g when
// gStride == f, or u when uStride == f: each thread reads the two values
// of its own element before writing it.
extern "C" __global__ void glu_act(const float *g, const float *u, float *out, int f, int gStride, int uStride,
                                   int rows, int act) {
  const long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long)rows * f) return;
  const int r = (int)(i / f), c = (int)(i - (long)r * f);
  const float x = g[(size_t)r * gStride + c], y = u[(size_t)r * uStride + c];
  out[i] = glu_value(x, y, act);
}

// scale_f32: out[i] = in[i] * s for i < n whose i % period < width (the
// others copied); out may be in. period = width = n scales everything;
// period = headDim, width = ropeDim the rotated values of every head.
extern "C" __global__ void scale_f32(const float *in, float *out, int n, float s, int period, int width) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = i % period < width ? in[i] * s : in[i];
}

// softcap_f32: out[i] = cap * tanh(in[i] * inv) with inv = 1/cap, for i <
// n; out may be in.
extern "C" __global__ void softcap_f32(const float *in, float *out, int n, float cap, float inv) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = cap * tanhf(in[i] * inv);
}

// copy_cols: dst[r, c] = src[r*srcStride + off + c] for r < rows, c <
// cols (dst is rows × cols, and no part of src).
extern "C" __global__ void copy_cols(const float *__restrict__ src, float *__restrict__ dst, int rows, int cols,
                                     int srcStride, int off) {
  const long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long)rows * cols) return;
  const int r = (int)(i / cols), c = (int)(i - (long)r * cols);
  dst[i] = src[(size_t)r * srcStride + off + c];
}

// moe_route: for each row r < rows of the router's logits (rows × E), the
// softmax over the E experts, the k most probable (the lower index first
// among equals), their probabilities renormalized to sum 1: w[r, e] is
// that weight for a chosen expert and 0 for the others; when pick is set,
// pick[r*k + j] is the j-th chosen expert (the most probable first) and
// pw[r*k + j] its weight. One thread per row; k ≤ ARCH_MOE_MAXK.
extern "C" __global__ void moe_route(const float *__restrict__ logits, float *__restrict__ w, int *__restrict__ pick_out,
                                     float *__restrict__ pw_out, int E, int k, int rows) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float *l = logits + (size_t)r * E;
  float *o = w + (size_t)r * E;
  float mx = l[0];
  for (int e = 1; e < E; e++) mx = fmaxf(mx, l[e]);
  float sum = 0.f;
  for (int e = 0; e < E; e++) {
    const float v = expf(l[e] - mx);
    o[e] = v;
    sum += v;
  }
  const float inv = 1.f / sum;
  for (int e = 0; e < E; e++) o[e] *= inv;
  int pick[ARCH_MOE_MAXK];
  float pw[ARCH_MOE_MAXK];
  float tot = 0.f;
  for (int j = 0; j < k; j++) {
    int best = -1;
    for (int e = 0; e < E; e++) {
      bool taken = false;
      for (int i = 0; i < j; i++) taken = taken || pick[i] == e;
      if (!taken && (best < 0 || o[e] > o[best])) best = e;
    }
    pick[j] = best, pw[j] = o[best], tot += o[best];
  }
  for (int e = 0; e < E; e++) o[e] = 0.f;
  for (int j = 0; j < k; j++) o[pick[j]] = pw[j] / tot;
  if (pick_out != nullptr) {
    for (int j = 0; j < k; j++) pick_out[(size_t)r * k + j] = pick[j], pw_out[(size_t)r * k + j] = pw[j] / tot;
  }
}

#define MOE_WARPS 8 // rows per block of moe_matvec: one per warp

// moe_matvec_<TYPE>: y[i, r] = W_e[r, :] · x[xi, :] for slot i (grid y) of
// n = B·k slots, e = pick[i] (token i/k's (i%k)-th expert), xi = i/k, or i
// when perSlot is set (the down projection of each slot's own input).
// W_e is the matrix of expert e: rows rows of rowBytes bytes, the experts
// expertBytes apart, in the GGUF layout (not the wide one). Grid
// (ceil(rows/MOE_WARPS), n), MOE_WARPS·32 threads: warp w takes row
// blockIdx.x·MOE_WARPS + w, its lanes the 32-value chunks lane, lane+32,
// ... of the row, each dotted with the same values of x, which for a
// quantized matrix are first rounded to 8 bits per 32-value block (d =
// max|v|/127), as every other product of the engine rounds them. Only the
// chosen experts' rows are read.
template <int T, bool Q8>
static __device__ __forceinline__ void moe_matvec(const uint8_t *__restrict__ W, long long rowBytes, long long expertBytes,
                                                  int rows, int cols, const float *__restrict__ x,
                                                  const int *__restrict__ pick, int k, int perSlot, float *__restrict__ y) {
  const int i = blockIdx.y, lane = threadIdx.x & 31;
  const int r = blockIdx.x * MOE_WARPS + (threadIdx.x >> 5);
  if (r >= rows) return; // a whole warp
  const uint8_t *row = W + (size_t)pick[i] * expertBytes + (size_t)r * rowBytes;
  const float *xr = x + (size_t)(perSlot ? i : i / k) * cols;
  float acc = 0.f;
  for (int c = lane; c < (cols >> 5); c += 32) {
    float w[32], v[32];
    Chunk<T>::load(row, c, w);
    const float4 *xp = (const float4 *)(xr + (size_t)c * 32);
#pragma unroll
    for (int j = 0; j < 8; j++) {
      const float4 q = xp[j];
      v[4 * j] = q.x, v[4 * j + 1] = q.y, v[4 * j + 2] = q.z, v[4 * j + 3] = q.w;
    }
    if (Q8) {
      float amax = 0.f;
#pragma unroll
      for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(v[j]));
      const float d = amax / 127.f, id = amax > 0.f ? 127.f / amax : 0.f;
#pragma unroll
      for (int j = 0; j < 32; j++) v[j] = d * (float)__float2int_rn(v[j] * id);
    }
    float sum = 0.f;
#pragma unroll
    for (int j = 0; j < 32; j++) sum += w[j] * v[j];
    acc += sum;
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
  if (lane == 0) y[(size_t)i * rows + r] = acc;
}

#define MOE_MATVEC(NAME, T)                                                                                  \
  extern "C" __global__ void __launch_bounds__(MOE_WARPS * 32)                                               \
      moe_matvec_##NAME(const uint8_t *W, long long rowBytes, long long expertBytes, int rows, int cols,     \
                        const float *x, const int *pick, int k, int perSlot, float *y) {                     \
    moe_matvec<T, (T != T_F32 && T != T_F16 && T != T_BF16)>(W, rowBytes, expertBytes, rows, cols, x, pick, \
                                                             k, perSlot, y);                                 \
  }

MOE_MATVEC(F32, T_F32)
MOE_MATVEC(F16, T_F16)
MOE_MATVEC(BF16, T_BF16)
MOE_MATVEC(Q8_0, T_Q8_0)
MOE_MATVEC(Q4_0, T_Q4_0)
MOE_MATVEC(Q4_1, T_Q4_1)
MOE_MATVEC(Q5_0, T_Q5_0)
MOE_MATVEC(Q5_1, T_Q5_1)
MOE_MATVEC(Q2_K, T_Q2_K)
MOE_MATVEC(Q3_K, T_Q3_K)
MOE_MATVEC(Q4_K, T_Q4_K)
MOE_MATVEC(Q5_K, T_Q5_K)
MOE_MATVEC(Q6_K, T_Q6_K)

// moe_combine: out[b, c] = Σ_j pw[b*k + j] · y[b*k + j, c] for b < B, c <
// cols: each token's chosen experts' outputs, weighted.
extern "C" __global__ void moe_combine(float *__restrict__ out, const float *__restrict__ y, const float *__restrict__ pw,
                                       int k, int cols, int B) {
  const long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long)B * cols) return;
  const int b = (int)(i / cols), c = (int)(i - (long)b * cols);
  float v = 0.f;
  for (int j = 0; j < k; j++) v += pw[(size_t)b * k + j] * y[((size_t)b * k + j) * cols + c];
  out[i] = v;
}

// moe_accum: acc[r, c] (init: =, else +=) w[r*E + e] * y[r, c] for r <
// rows, c < cols; a zero weight adds nothing (the expert's output of a
// token that did not choose it is not read).
extern "C" __global__ void moe_accum(float *__restrict__ acc, const float *__restrict__ y,
                                     const float *__restrict__ w, int E, int e, int cols, int rows, int init) {
  const long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long)rows * cols) return;
  const int r = (int)(i / cols);
  const float wt = w[(size_t)r * E + e];
  const float v = wt != 0.f ? wt * y[i] : 0.f;
  acc[i] = init ? v : acc[i] + v;
}

// moe_gather: out[r, c] = x[(order[r] / k) * cols + c] for r < n, c <
// cols: the input row of each (token, pick) slot in the grouped order of
// an expert mixture (the slots of expert 0, then of expert 1, ...), k
// picks per token, x of xRows rows. A slot whose token is not a row of x
// writes NaN instead of reading past x.
extern "C" __global__ void moe_gather(const float *__restrict__ x, const int *__restrict__ order, float *__restrict__ out,
                                      int k, int cols, int n, int xRows) {
  const long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long)n * cols) return;
  const int r = (int)(i / cols), c = (int)(i - (long)r * cols);
  const int s = order[r];
  const int b = s >= 0 ? s / k : -1;
  out[i] = b >= 0 && b < xRows ? x[(size_t)b * cols + c] : __int_as_float(0x7fc00000);
}

// moe_combine_rows: out[b, c] = Σ_j pw[b*k + j] · y[inv[b*k + j], c] for
// b < B, c < cols, summed in the order j = 0..k-1 (as moe_combine sums):
// each token's chosen experts' outputs, which lie in the grouped order at
// the rows inv gives (y of yRows rows). A row outside y makes the sum NaN
// instead of reading past y.
extern "C" __global__ void moe_combine_rows(float *__restrict__ out, const float *__restrict__ y, const float *__restrict__ pw,
                                            const int *__restrict__ inv, int k, int cols, int B, int yRows) {
  const long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= (long)B * cols) return;
  const int b = (int)(i / cols), c = (int)(i - (long)b * cols);
  float v = 0.f;
  for (int j = 0; j < k; j++) {
    const int r = inv[(size_t)b * k + j];
    v += r >= 0 && r < yRows ? pw[(size_t)b * k + j] * y[(size_t)r * cols + c] : __int_as_float(0x7fc00000);
  }
  out[i] = v;
}
