// matvec.cu: fused products y = W·x (see fused.cuh) for a GGUF weight
// matrix W (rows × cols, stored as the file stores it) and a batch of B ≤ 64
// f32 vectors, dequantizing on the fly with f32 accumulation; and embedding
// lookup (rows of W by token id). mvq.cu has the faster 8-bit kernels for
// the common quantized types at B ≤ 8; these serve every type and batch.
//
// matvec_<TYPE>_<NB>: R rows per warp (2 once x is read for several
// columns, and always in GLU mode: gate and up), MV_WARPS warps per block;
// lane l of a warp takes chunk l of each tile of 32 chunks, so a warp reads
// a contiguous stretch of the row. Grid (B/NB, rows/(MV_WARPS*R)): block x
// covers batch columns [NB*x, NB*x+NB), and the blocks reading the same
// rows for different columns run together, so the weights come from L2
// after the first.
#include "fused.cuh"

#define MV_TILE 32  // chunks per tile: one per lane
#define MV_PAD 36   // floats per chunk in shared memory: 32 + 4, so lanes' 16-byte reads miss each other's banks

// mv_warp_rows finds the rows warp `w` of block `blk` computes: R rows of
// one segment from row *r (GLU: row *r of gate and of up). It returns the
// segment, or -1 when the warp has no rows.
template <int R>
__device__ __forceinline__ int mv_warp_rows(const MVArgs &a, int blk, int w, int *r) {
  const int total = mv_rows(a);
  if (a.glu) {
    *r = blk * MV_WARPS + w;
    return *r < total ? 0 : -1;
  }
  const int g = (blk * MV_WARPS + w) * R;
  if (g >= total) return -1;
  return mv_locate(a, g, r);
}

// The block's warps walk their rows in tiles of 32 chunks, one per lane.
// Each tile of x (NB columns × 1024 values) is staged in shared memory with
// coalesced 16-byte loads (normalized and quantized on the way), once for
// the block's MV_WARPS*R rows; each warp takes R rows, so every value of x
// read from shared memory serves R rows.
template <int T, int NB, int R, bool Q8>
__device__ __forceinline__ void matvec(const MVArgs &a) {
  __shared__ float4 xs4[NB * MV_TILE * MV_PAD / 4];
  __shared__ float red[MV_WARPS], scale[NB];
  grid_begin();
  float *xs = (float *)xs4;
  const int lane = threadIdx.x & 31;
  const int cols = a.cols;
  int lr = 0;
  const int s = mv_warp_rows<R>(a, blockIdx.y, threadIdx.x >> 5, &lr);
  const MVSeg sg = mv_seg(a, s < 0 ? 0 : s);
  const uint8_t *rowp[R];
  bool ok[R];
#pragma unroll
  for (int k = 0; k < R; k++) {
    if (a.glu) {
      ok[k] = s >= 0;
      rowp[k] = (k == 0 ? a.s0.W + (size_t)lr * a.s0.rowBytes : a.s1.W + (size_t)lr * a.s1.rowBytes);
    } else {
      ok[k] = s >= 0 && lr + k < sg.rows;
      rowp[k] = sg.W + (size_t)(lr + k) * sg.rowBytes;
    }
  }
  const int b0 = blockIdx.x * NB;
  const int nb = min(NB, a.B - b0);
  for (int b = 0; b < nb; b++) {
    const float sc = a.norm != nullptr ? rms_scale(a.x + (size_t)(b0 + b) * cols, cols, a.eps, red) : 1.f;
    if (threadIdx.x == 0) scale[b] = sc;
  }
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
    // Whole warps iterate together (8 lanes hold one 32-value block), so
    // the quantization's shuffles see converged warps.
    for (int i0 = 0; i0 < nb * n4; i0 += MV_THREADS) {
      const int i = i0 + threadIdx.x;
      const bool in = i < nb * n4;
      const int b = in ? i / n4 : 0, j = in ? i - b * n4 : 0;
      float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
      if (in) v = stage4(a.x + (size_t)(b0 + b) * cols, a.norm, scale[b], c0 * 32 + 4 * j);
      if (Q8) {
        float d;
        int qs;
        const uint32_t q = q8_quad(v, &d, &qs);
        v = make_float4(q8_value(q, 0, d), q8_value(q, 1, d), q8_value(q, 2, d), q8_value(q, 3, d));
      }
      if (in) *(float4 *)(xs + (b * MV_TILE + (j >> 3)) * MV_PAD + 4 * (j & 7)) = v;
    }
    __syncthreads();
    if (s >= 0 && lane < tile) {
      float w[R][32];
#pragma unroll
      for (int k = 0; k < R; k++) {
        if (ok[k]) {
          Chunk<T>::load(rowp[k], c0 + lane, w[k]);
        } else {
#pragma unroll
          for (int i = 0; i < 32; i++) w[k][i] = 0.f;
        }
      }
#pragma unroll
      for (int b = 0; b < NB; b++) {
        if (b < nb) {
          const float4 *xp = (const float4 *)(xs + (b * MV_TILE + lane) * MV_PAD);
          float sum[R];
#pragma unroll
          for (int k = 0; k < R; k++) sum[k] = 0.f;
#pragma unroll
          for (int i = 0; i < 8; i++) {
            const float4 v = xp[i];
#pragma unroll
            for (int k = 0; k < R; k++)
              sum[k] += w[k][4 * i] * v.x + w[k][4 * i + 1] * v.y + w[k][4 * i + 2] * v.z + w[k][4 * i + 3] * v.w;
          }
#pragma unroll
          for (int k = 0; k < R; k++) acc[k][b] += sum[k];
        }
      }
    }
  }
  if (s < 0) return;
#pragma unroll
  for (int k = 0; k < R; k++)
#pragma unroll
    for (int b = 0; b < NB; b++)
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) acc[k][b] += __shfl_xor_sync(0xffffffffu, acc[k][b], off);
#pragma unroll
  for (int b = 0; b < NB; b++) {
    if (lane != b || b >= nb) continue;
    if (a.glu) {
      mv_store_glu(a, lr, b0 + b, acc[0][b], acc[R - 1][b]);
    } else {
#pragma unroll
      for (int k = 0; k < R; k++)
        if (ok[k]) mv_store(a, s, lr + k, b0 + b, acc[k][b]);
    }
  }
}

// get_rows: out[b, :] = row ids[b] of W, dequantized; one thread per chunk.
// An id outside [0, nrows) gives a zero row.
template <int T>
__device__ __forceinline__ void get_rows(const uint8_t *__restrict__ W, const int *__restrict__ ids,
                                         float *__restrict__ out, int cols, long long rowBytes, int nrows) {
  grid_begin();
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
// chunks (or not 16-byte aligned): lanes stride over single values, one row
// per warp (no GLU: the caller runs gate and up apart).
template <int T, int NB>
__device__ __forceinline__ void matvec_elem(const MVArgs &a) {
  __shared__ float red[MV_WARPS], scale[NB];
  grid_begin();
  const int lane = threadIdx.x & 31;
  int r = 0;
  const int s = mv_warp_rows<1>(a, blockIdx.y, threadIdx.x >> 5, &r);
  const int b0 = blockIdx.x * NB, cols = a.cols;
  for (int b = 0; b < NB && b0 + b < a.B; b++) {
    const float sc = a.norm != nullptr ? rms_scale(a.x + (size_t)(b0 + b) * cols, cols, a.eps, red) : 1.f;
    if (threadIdx.x == 0) scale[b] = sc;
  }
  __syncthreads();
  if (s < 0) return;
  const MVSeg sg = mv_seg(a, s);
  const uint8_t *row = sg.W + (size_t)r * sg.rowBytes;
  float acc[NB];
#pragma unroll
  for (int b = 0; b < NB; b++) acc[b] = 0.f;
  for (int k = lane; k < cols; k += 32) {
    const float w = load_elem<T>(row, k);
    const float nw = a.norm != nullptr ? a.norm[k] : 1.f;
#pragma unroll
    for (int b = 0; b < NB; b++)
      if (b0 + b < a.B) acc[b] += w * (a.x[(size_t)(b0 + b) * cols + k] * scale[b] * nw);
  }
#pragma unroll
  for (int b = 0; b < NB; b++) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) acc[b] += __shfl_xor_sync(0xffffffffu, acc[b], off);
  }
#pragma unroll
  for (int b = 0; b < NB; b++) {
    if (lane == b && b0 + b < a.B) mv_store(a, s, r, b0 + b, acc[b]);
  }
}

#define MATVEC_ELEM(NAME, T, NB)                                                                     \
  extern "C" __global__ void __launch_bounds__(MV_THREADS) matvec_elem_##NAME##_##NB(MV_PARAMS) {     \
    matvec_elem<T, NB>(MV_ARGS);                                                                     \
  }

#define ELEM_TYPE(NAME, T)                                                                           \
  MATVEC_ELEM(NAME, T, 1)                                                                            \
  MATVEC_ELEM(NAME, T, 2)                                                                            \
  MATVEC_ELEM(NAME, T, 4)                                                                            \
  MATVEC_ELEM(NAME, T, 8)                                                                            \
  extern "C" __global__ void get_rows_elem_##NAME(const uint8_t *W, const int *ids, float *out,      \
                                                  int cols, long long rowBytes, int nrows) {         \
    grid_begin();                                                                                    \
    const int b = blockIdx.y, k = blockIdx.x * blockDim.x + threadIdx.x, id = ids[b];               \
    if (k < cols) out[(size_t)b * cols + k] = id >= 0 && id < nrows ? load_elem<T>(W + (size_t)id * rowBytes, k) : 0.f; \
  }

ELEM_TYPE(F32, T_F32)
ELEM_TYPE(F16, T_F16)
ELEM_TYPE(BF16, T_BF16)

// matvec_<TYPE>_<NB> takes one or two rows per warp; matvec_<TYPE>_<NB>_glu
// takes a gate and an up row per warp.
#define MATVEC(NAME, T, NB, Q8)                                                                      \
  extern "C" __global__ void __launch_bounds__(MV_THREADS) matvec_##NAME##_##NB(MV_PARAMS) {          \
    matvec<T, NB, ((NB) >= 4 ? 2 : 1), Q8>(MV_ARGS);                                                 \
  }                                                                                                  \
  extern "C" __global__ void __launch_bounds__(MV_THREADS) matvec_##NAME##_##NB##_glu(MV_PARAMS) {   \
    matvec<T, NB, 2, Q8>(MV_ARGS);                                                                   \
  }

#define TYPE(NAME, T)                                                                                \
  MATVEC(NAME, T, 1, (T != T_F32 && T != T_F16 && T != T_BF16))                                      \
  MATVEC(NAME, T, 2, (T != T_F32 && T != T_F16 && T != T_BF16))                                      \
  MATVEC(NAME, T, 4, (T != T_F32 && T != T_F16 && T != T_BF16))                                      \
  MATVEC(NAME, T, 8, (T != T_F32 && T != T_F16 && T != T_BF16))                                      \
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
