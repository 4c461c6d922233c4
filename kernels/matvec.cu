// matvec.cu: y = W·x for a GGUF weight matrix W (rows × cols, stored as
// the file stores it) and a batch of B ≤ 64 f32 vectors, dequantizing on the
// fly with f32 accumulation; and embedding lookup (rows of W by token id).
//
// matvec_<TYPE>_<NB>: MV_ROWS(NB) rows per warp, MV_WARPS warps per block;
// lane l of a warp takes chunk l of each tile of 32 chunks, so a warp reads
// a contiguous stretch of the row. Grid (B/NB, rows/(MV_WARPS*MV_ROWS)): block x covers
// batch columns [NB*x, NB*x+NB), and the blocks reading the same rows for
// different columns run together, so the weights come from L2 after the
// first.
#include "quant.cuh"

#define MV_WARPS 8  // rows (warps) per block
#define MV_TILE 32  // chunks per tile: one per lane
#define MV_PAD 36   // floats per chunk in shared memory: 32 + 4, so lanes' 16-byte reads miss each other's banks
#define MV_ROWS(NB) ((NB) >= 4 ? 2 : 1) // rows per warp: 2 once x is read for several columns

// The block's warps walk their rows in tiles of 32 chunks, one per lane.
// Each tile of x (NB columns × 1024 values) is staged in shared memory with
// coalesced 16-byte loads, once for the block's MV_WARPS*R rows; each warp
// takes R rows, so every value of x read from shared memory serves R rows.
template <int T, int NB, int R>
__device__ __forceinline__ void matvec(const uint8_t *__restrict__ W, const float *__restrict__ x,
                                       float *__restrict__ y, int rows, int cols, long long rowBytes, int B) {
  __shared__ float4 xs4[NB * MV_TILE * MV_PAD / 4];
  float *xs = (float *)xs4;
  const int lane = threadIdx.x & 31;
  const int r0 = (blockIdx.y * MV_WARPS + (threadIdx.x >> 5)) * R;
  const int b0 = blockIdx.x * NB;
  const int nb = min(NB, B - b0);
  float acc[R][NB];
#pragma unroll
  for (int k = 0; k < R; k++)
#pragma unroll
    for (int b = 0; b < NB; b++) acc[k][b] = 0.f;
  const int chunks = cols >> 5;
  for (int c0 = 0; c0 < chunks; c0 += MV_TILE) {
    const int tile = min(MV_TILE, chunks - c0);
    const int n4 = tile * 8; // float4s per column in this tile
    __syncthreads();
    for (int i = threadIdx.x; i < nb * n4; i += blockDim.x) {
      const int b = i / n4, j = i - b * n4;
      const float4 v = __ldg((const float4 *)(x + (size_t)(b0 + b) * cols + (size_t)c0 * 32) + j);
      *(float4 *)(xs + (b * MV_TILE + (j >> 3)) * MV_PAD + 4 * (j & 7)) = v;
    }
    __syncthreads();
    if (r0 < rows && lane < tile) {
      float w[R][32];
#pragma unroll
      for (int k = 0; k < R; k++) {
        if (r0 + k < rows) {
          Chunk<T>::load(W + (size_t)(r0 + k) * rowBytes, c0 + lane, w[k]);
        } else {
#pragma unroll
          for (int i = 0; i < 32; i++) w[k][i] = 0.f;
        }
      }
#pragma unroll
      for (int b = 0; b < NB; b++) {
        if (b < nb) {
          const float4 *xp = (const float4 *)(xs + (b * MV_TILE + lane) * MV_PAD);
          float s[R];
#pragma unroll
          for (int k = 0; k < R; k++) s[k] = 0.f;
#pragma unroll
          for (int i = 0; i < 8; i++) {
            const float4 v = xp[i];
#pragma unroll
            for (int k = 0; k < R; k++)
              s[k] += w[k][4 * i] * v.x + w[k][4 * i + 1] * v.y + w[k][4 * i + 2] * v.z + w[k][4 * i + 3] * v.w;
          }
#pragma unroll
          for (int k = 0; k < R; k++) acc[k][b] += s[k];
        }
      }
    }
  }
#pragma unroll
  for (int k = 0; k < R; k++) {
    if (r0 + k >= rows) break;
#pragma unroll
    for (int b = 0; b < NB; b++) {
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) acc[k][b] += __shfl_xor_sync(0xffffffffu, acc[k][b], off);
    }
#pragma unroll
    for (int b = 0; b < NB; b++) {
      if (lane == b && b < nb) y[(size_t)(b0 + b) * rows + r0 + k] = acc[k][b];
    }
  }
}

// get_rows: out[b, :] = row ids[b] of W, dequantized; one thread per chunk.
// An id outside [0, nrows) gives a zero row.
template <int T>
__device__ __forceinline__ void get_rows(const uint8_t *__restrict__ W, const int *__restrict__ ids,
                                         float *__restrict__ out, int cols, long long rowBytes, int nrows) {
  const int b = blockIdx.y;
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= (cols >> 5)) return;
  const int id = ids[b];
  float w[32];
  if (id >= 0 && id < nrows) {
    Chunk<T>::load(W + (size_t)id * rowBytes, c, w);
  } else {
#pragma unroll
    for (int i = 0; i < 32; i++) w[i] = 0.f;
  }
  float4 *o = (float4 *)(out + (size_t)b * cols + (size_t)c * 32);
#pragma unroll
  for (int i = 0; i < 8; i++) o[i] = make_float4(w[4 * i], w[4 * i + 1], w[4 * i + 2], w[4 * i + 3]);
}

// load_elem reads value k of a row of a float type.
template <int T> __device__ __forceinline__ float load_elem(const uint8_t *row, int k);
template <> __device__ __forceinline__ float load_elem<T_F32>(const uint8_t *row, int k) {
  return __ldg((const float *)row + k);
}
template <> __device__ __forceinline__ float load_elem<T_F16>(const uint8_t *row, int k) {
  return h2f(__ldg((const unsigned short *)row + k));
}
template <> __device__ __forceinline__ float load_elem<T_BF16>(const uint8_t *row, int k) {
  return bf2f(__ldg((const unsigned short *)row + k));
}

// matvec_elem is matvec for float types whose rows are not whole 32-value
// chunks (or not 16-byte aligned): lanes stride over single values.
template <int T, int NB>
__device__ __forceinline__ void matvec_elem(const uint8_t *__restrict__ W, const float *__restrict__ x,
                                            float *__restrict__ y, int rows, int cols, long long rowBytes, int B) {
  const int lane = threadIdx.x & 31;
  const int r = blockIdx.y * MV_WARPS + (threadIdx.x >> 5);
  if (r >= rows) return;
  const int b0 = blockIdx.x * NB;
  const uint8_t *row = W + (size_t)r * rowBytes;
  float acc[NB];
#pragma unroll
  for (int b = 0; b < NB; b++) acc[b] = 0.f;
  for (int k = lane; k < cols; k += 32) {
    const float w = load_elem<T>(row, k);
#pragma unroll
    for (int b = 0; b < NB; b++)
      if (b0 + b < B) acc[b] += w * x[(size_t)(b0 + b) * cols + k];
  }
#pragma unroll
  for (int b = 0; b < NB; b++) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) acc[b] += __shfl_xor_sync(0xffffffffu, acc[b], off);
  }
#pragma unroll
  for (int b = 0; b < NB; b++) {
    if (lane == b && b0 + b < B) y[(size_t)(b0 + b) * rows + r] = acc[b];
  }
}

#define MATVEC_ELEM(NAME, T, NB)                                                                     \
  extern "C" __global__ void __launch_bounds__(32 * MV_WARPS)                                        \
      matvec_elem_##NAME##_##NB(const uint8_t *W, const float *x, float *y, int rows, int cols,      \
                                long long rowBytes, int B) {                                         \
    matvec_elem<T, NB>(W, x, y, rows, cols, rowBytes, B);                                            \
  }

#define ELEM_TYPE(NAME, T)                                                                           \
  MATVEC_ELEM(NAME, T, 1)                                                                            \
  MATVEC_ELEM(NAME, T, 2)                                                                            \
  MATVEC_ELEM(NAME, T, 4)                                                                            \
  MATVEC_ELEM(NAME, T, 8)                                                                            \
  extern "C" __global__ void get_rows_elem_##NAME(const uint8_t *W, const int *ids, float *out,      \
                                                  int cols, long long rowBytes, int nrows) {         \
    const int b = blockIdx.y, k = blockIdx.x * blockDim.x + threadIdx.x, id = ids[b];               \
    if (k < cols) out[(size_t)b * cols + k] = id >= 0 && id < nrows ? load_elem<T>(W + (size_t)id * rowBytes, k) : 0.f; \
  }

ELEM_TYPE(F32, T_F32)
ELEM_TYPE(F16, T_F16)
ELEM_TYPE(BF16, T_BF16)

#define MATVEC(NAME, T, NB)                                                                          \
  extern "C" __global__ void __launch_bounds__(32 * MV_WARPS)                                        \
      matvec_##NAME##_##NB(const uint8_t *W, const float *x, float *y, int rows, int cols,           \
                           long long rowBytes, int B) {                                              \
    matvec<T, NB, MV_ROWS(NB)>(W, x, y, rows, cols, rowBytes, B);                                                 \
  }

#define TYPE(NAME, T)                                                                                \
  MATVEC(NAME, T, 1)                                                                                 \
  MATVEC(NAME, T, 2)                                                                                 \
  MATVEC(NAME, T, 4)                                                                                 \
  MATVEC(NAME, T, 8)                                                                                 \
  extern "C" __global__ void get_rows_##NAME(const uint8_t *W, const int *ids, float *out, int cols, \
                                             long long rowBytes, int nrows) {                        \
    get_rows<T>(W, ids, out, cols, rowBytes, nrows);                                                 \
  }

TYPE(F32, T_F32)
TYPE(F16, T_F16)
TYPE(BF16, T_BF16)
TYPE(Q8_0, T_Q8_0)
TYPE(Q4_0, T_Q4_0)
TYPE(Q4_1, T_Q4_1)
TYPE(Q5_0, T_Q5_0)
TYPE(Q5_1, T_Q5_1)
TYPE(Q2_K, T_Q2_K)
TYPE(Q3_K, T_Q3_K)
TYPE(Q4_K, T_Q4_K)
TYPE(Q5_K, T_Q5_K)
TYPE(Q6_K, T_Q6_K)
