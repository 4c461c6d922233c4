// mmh.cu: matrix-matrix products Y[B×rows] = X[B×cols] · Wᵀ on the tensor
// cores for 16-bit float weights (F16 and BF16 as stored: row-major
// [rows][cols], cols a multiple of 8), with mma.sync m16n8k16 and f32
// accumulation (sm_80 and newer).
//
// Two launches:
//   - mmh_convert_<type> rounds X (f32) to the weights' type, to nearest
//     with ties to even, into a scratch buffer of B × cols 16-bit values;
//   - mmh_<type>_<BM>x<BN>_<WM>x<WN>[_k<BK>s<STAGES>] multiplies: a block
//     computes a BM × BN tile of Y (BM weight rows by BN batch rows) with
//     one warp per WM × WN sub-tile (MMH_KERNELS lists the tiles compiled).
//     The k axis runs in stages of BK values (MMH_BK unless named) whose W
//     and X tiles cp.async copies to shared memory in 16-byte chunks,
//     STAGES stages in flight (MMH_STAGES unless named); rows of the staged
//     tiles are padded by MMH_PAD values (16 bytes) so that the eight
//     16-byte rows an ldmatrix phase reads fall in distinct banks.
//     Fragments are read with ldmatrix.x4 (W as the row-major A operand, X
//     as the column-major B operand: both are k-contiguous), and every value
//     of Y sums its products in k order, 16 at a time, the same in every
//     tile, staging and batch. The epilogue writes Y, or adds to it
//     (accumulate: the residual connection).
//
// The parameters travel as one struct by value, MmhParams, whose layout the
// Go side (mmhParams in mmh_cuda.go) mirrors; mmh_layout writes its offsets
// for the test that checks both agree.
#include <stdint.h>
#include <stddef.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#define MMH_BK 32    // k values per stage, unless a kernel names its own
#define MMH_STAGES 4 // stages in flight, unless a kernel names its own
#define MMH_PAD 8    // 16-bit values of padding past a staged row (16 bytes)

// Type codes, as gguf.Type.
#define MMH_T_F16 1
#define MMH_T_BF16 30

// MmhParams is one product. Pointers are device addresses, w and x 16-byte
// aligned; cols is a multiple of 8, so every row starts 16-byte aligned.
struct MmhParams {
  const uint16_t *w; // rows × cols: the weights, f16 or bf16
  const uint16_t *x; // batch × cols: X rounded to the weights' type (mmh_convert)
  float *y;          // batch × rows: the result
  int rows;          // rows of W (columns of Y)
  int cols;          // columns of W and X
  int batch;         // rows of X and Y
  int accumulate;    // 1: y += X·Wᵀ; 0: y = X·Wᵀ
  int type;          // MMH_T_* (documentation and checks; each kernel reads one)
  int pad;           // unused, keeps the size a multiple of 8
};

static_assert(sizeof(MmhParams) == 48, "MmhParams is 48 bytes (mmhParams in mmh_cuda.go)");
static_assert(offsetof(MmhParams, rows) == 24, "MmhParams.rows at 24");
static_assert(offsetof(MmhParams, type) == 40, "MmhParams.type at 40");

// mmh_layout writes sizeof(MmhParams) and the offset of each field, in
// declaration order, to out[0..9], then MMH_BK, MMH_STAGES and MMH_PAD to
// out[10..12], for the layout test.
extern "C" __global__ void mmh_layout(int *out) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  out[0] = sizeof(MmhParams);
  out[1] = offsetof(MmhParams, w);
  out[2] = offsetof(MmhParams, x);
  out[3] = offsetof(MmhParams, y);
  out[4] = offsetof(MmhParams, rows);
  out[5] = offsetof(MmhParams, cols);
  out[6] = offsetof(MmhParams, batch);
  out[7] = offsetof(MmhParams, accumulate);
  out[8] = offsetof(MmhParams, type);
  out[9] = offsetof(MmhParams, pad);
  out[10] = MMH_BK;
  out[11] = MMH_STAGES;
  out[12] = MMH_PAD;
}

// Pack2<T> rounds two floats to the 16-bit type T, to nearest with ties to
// even, a in the low half (the lower k index, as mma reads a register).
template <int T> struct Pack2;
template <> struct Pack2<MMH_T_F16> {
  static __device__ __forceinline__ uint32_t of(float a, float b) {
    const __half2 h = __floats2half2_rn(a, b);
    return *(const uint32_t *)&h;
  }
};
template <> struct Pack2<MMH_T_BF16> {
  static __device__ __forceinline__ uint32_t of(float a, float b) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    return *(const uint32_t *)&h;
  }
};

// mmh_convert rounds n8 groups of 8 consecutive f32 values of x (16-byte
// aligned) to 16-bit values of type T in xh: one group a thread, in a
// grid-stride loop.
template <int T>
static __device__ __forceinline__ void mmh_convert(const float *__restrict__ x, uint16_t *__restrict__ xh, long long n8) {
  const float4 *src = (const float4 *)x;
  uint4 *dst = (uint4 *)xh;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n8; i += (long long)gridDim.x * blockDim.x) {
    const float4 a = src[2 * i], b = src[2 * i + 1];
    dst[i] = make_uint4(Pack2<T>::of(a.x, a.y), Pack2<T>::of(a.z, a.w), Pack2<T>::of(b.x, b.y), Pack2<T>::of(b.z, b.w));
  }
}
extern "C" __global__ void mmh_convert_f16(const float *__restrict__ x, uint16_t *__restrict__ xh, long long n8) {
  mmh_convert<MMH_T_F16>(x, xh, n8);
}
extern "C" __global__ void mmh_convert_bf16(const float *__restrict__ x, uint16_t *__restrict__ xh, long long n8) {
  mmh_convert<MMH_T_BF16>(x, xh, n8);
}

static __device__ __forceinline__ uint32_t mmh_smem(const void *p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}

// mmh_cp16 copies 16 bytes from global src to shared dst, or zero-fills
// them when valid is false (src is then not read, but must be a valid
// address).
static __device__ __forceinline__ void mmh_cp16(void *dst, const void *src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(mmh_smem(dst)), "l"(src), "r"(valid ? 16 : 0));
}
static __device__ __forceinline__ void mmh_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> static __device__ __forceinline__ void mmh_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// ldmatrix_x4 loads four 8×8 matrices of 16-bit values: lanes 8i..8i+7
// give the addresses of the rows of matrix i, and register i of lane l
// holds row l/4, values 2(l%4) and 2(l%4)+1, of matrix i.
static __device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], const uint16_t *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(mmh_smem(p)));
}

// Mma<T> is c += a·b for a 16×16 tile a (row-major fragments) and a 16×8
// tile b (column-major), 16-bit values of type T, f32 accumulators.
// Fragment layouts of m16n8k16 (PTX ISA), with g = lane/4 and t = lane%4:
// A's registers hold rows g, g+8, g, g+8 at values 2t, 2t+1 (+8 for the
// last two); B's hold column g at values 2t, 2t+1 and 2t+8, 2t+9; C's are
// (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1).
template <int T> struct Mma;
template <> struct Mma<MMH_T_F16> {
  static __device__ __forceinline__ void run(float c[4], const uint32_t a[4], const uint32_t b[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
  }
};
template <> struct Mma<MMH_T_BF16> {
  static __device__ __forceinline__ void run(float c[4], const uint32_t a[4], const uint32_t b[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
  }
};

// MmhRows is one thread's share of the copies that stage an N-row tile
// (W or X) of BK-value stages: chunk c = tid % CHUNKS of tile rows
// tid / CHUNKS + j · THREADS / CHUNKS, j < J, the same in every stage, so
// the row addresses are computed once. Chunks past the matrix's rows or
// columns are zero-filled.
template <int N, int THREADS, int BK> struct MmhRows {
  static constexpr int CHUNKS = BK / 8, LDS = BK + MMH_PAD;
  static constexpr int J = N * CHUNKS / THREADS;
  static_assert(N * CHUNKS % THREADS == 0 && THREADS % CHUNKS == 0, "whole copies per thread");
  const uint16_t *src[J]; // row j at this thread's chunk (the matrix's start when past its rows)
  bool ok[J];             // row j is within the matrix
  int c8;                 // the chunk's first value in a staged row: 8·(tid % CHUNKS)

  // init takes the rows from r0 of m (rows of cols values, limit of them).
  __device__ __forceinline__ void init(const uint16_t *m, int r0, int limit, int cols) {
    c8 = 8 * (threadIdx.x % CHUNKS);
#pragma unroll
    for (int j = 0; j < J; j++) {
      const int r = r0 + threadIdx.x / CHUNKS + j * (THREADS / CHUNKS);
      ok[j] = r < limit;
      src[j] = ok[j] ? m + (size_t)r * cols + c8 : m;
    }
  }

  // issue queues the copies of k stage s into dst (N rows of LDS
  // values).
  __device__ __forceinline__ void issue(uint16_t *dst, int s, int cols) const {
    const bool kin = s * BK + c8 < cols;
#pragma unroll
    for (int j = 0; j < J; j++) {
      const int i = threadIdx.x / CHUNKS + j * (THREADS / CHUNKS);
      const bool v = ok[j] && kin;
      mmh_cp16(dst + i * LDS + c8, v ? src[j] + s * BK : src[j], v);
    }
  }
};

// mmh is the product for weights of type T in BM × BN tiles of Y, one warp
// per WM × WN sub-tile; grid (ceil(batch/BN), ceil(rows/BM)): the blocks
// of one W tile are neighbours in launch order, so that a weight row is
// read from memory about once while the activations stay in L2;
// 32·(BM/WM)·(BN/WN) threads, STAGES·(BM+BN)·LDS·2 bytes of dynamic
// shared memory: per stage, BM rows of W then BN rows of X.
template <int T, int BM, int BN, int WM, int WN, int BK, int STAGES> static __device__ void mmh(const MmhParams &p) {
  constexpr int LDS = BK + MMH_PAD; // shared row stride in 16-bit values
  constexpr int THREADS = 32 * (BM / WM) * (BN / WN);
  constexpr int MT = WM / 16, NT = WN / 8; // m16 and n8 tiles per warp
  constexpr int STAGE = (BM + BN) * LDS;
  static_assert(WM % 16 == 0 && WN % 16 == 0 && BM % WM == 0 && BN % WN == 0, "tile shapes");
  static_assert(BK % 16 == 0 && STAGES >= 2, "staging");
  extern __shared__ __align__(128) uint16_t mmh_shared[];
  const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int wr = (warp % (BM / WM)) * WM, wc = (warp / (BM / WM)) * WN;
  const int stages = (p.cols + BK - 1) / BK;
  float acc[MT][NT][4];
#pragma unroll
  for (int mi = 0; mi < MT; mi++)
#pragma unroll
    for (int ni = 0; ni < NT; ni++)
#pragma unroll
      for (int e = 0; e < 4; e++) acc[mi][ni][e] = 0.0f;

  // The first STAGES-1 stages; a group is committed for each, empty
  // past the last stage, so that the wait counts below hold throughout.
  MmhRows<BM, THREADS, BK> wrows;
  MmhRows<BN, THREADS, BK> xrows;
  wrows.init(p.w, bm, p.rows, p.cols);
  xrows.init(p.x, bn, p.batch, p.cols);
#pragma unroll
  for (int s = 0; s < STAGES - 1; s++) {
    if (s < stages) {
      uint16_t *st = mmh_shared + s * STAGE;
      wrows.issue(st, s, p.cols);
      xrows.issue(st + BM * LDS, s, p.cols);
    }
    mmh_commit();
  }
  // Lane offsets of the ldmatrix addresses: for A (W rows), lane l gives
  // row l%16 at value 8·(l/16) of a 16-row tile (matrices: rows 0-7 and
  // 8-15 at values 0-7, then at 8-15: A's a0..a3); for B (X rows), row
  // l%8 + 8·(l/16) at value 8·((l/8)%2) of a 16-row pair of n8 tiles
  // (matrices: b0, b1 of the first tile, then of the second).
  const int a_off = (lane & 15) * LDS + 8 * (lane >> 4);
  const int b_off = ((lane & 7) + 8 * (lane >> 4)) * LDS + 8 * ((lane >> 3) & 1);
  for (int s = 0; s < stages; s++) {
    mmh_wait<STAGES - 2>(); // stage s has landed (this thread's copies)
    __syncthreads();        // everyone's copies, and stage s-1 is consumed
    {
      const int n = s + STAGES - 1; // refills the buffer of stage s-1
      if (n < stages) {
        uint16_t *st = mmh_shared + (n % STAGES) * STAGE;
        wrows.issue(st, n, p.cols);
        xrows.issue(st + BM * LDS, n, p.cols);
      }
      mmh_commit();
    }
    const uint16_t *sw = mmh_shared + (s % STAGES) * STAGE;
    const uint16_t *sx = sw + BM * LDS;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      uint32_t a[MT][4], b[NT][2];
#pragma unroll
      for (int mi = 0; mi < MT; mi++) ldmatrix_x4(a[mi], sw + (wr + 16 * mi) * LDS + kk + a_off);
#pragma unroll
      for (int nj = 0; nj < NT / 2; nj++) {
        uint32_t r[4];
        ldmatrix_x4(r, sx + (wc + 16 * nj) * LDS + kk + b_off);
        b[2 * nj][0] = r[0];
        b[2 * nj][1] = r[1];
        b[2 * nj + 1][0] = r[2];
        b[2 * nj + 1][1] = r[3];
      }
#pragma unroll
      for (int mi = 0; mi < MT; mi++)
#pragma unroll
        for (int ni = 0; ni < NT; ni++) Mma<T>::run(acc[mi][ni], a[mi], b[ni]);
    }
  }
  mmh_wait<0>(); // no copies outstanding at exit (the trailing groups are empty)

  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int mi = 0; mi < MT; mi++) {
#pragma unroll
    for (int ni = 0; ni < NT; ni++) {
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const int r = bm + wr + mi * 16 + g + (e >> 1) * 8;
        const int b = bn + wc + ni * 8 + 2 * t + (e & 1);
        if (r < p.rows && b < p.batch) {
          float *y = p.y + (size_t)b * p.rows + r;
          *y = p.accumulate ? *y + acc[mi][ni][e] : acc[mi][ni][e];
        }
      }
    }
  }
}

// The kernels: mmh_<type>_<BM>x<BN>_<WM>x<WN>[_k<BK>s<STAGES>], each held
// to the registers that let MINB blocks share a multiprocessor.
#define MMH_KERNEL(name, T, BM, BN, WM, WN, BK, STAGES, MINB)                                           \
  extern "C" __global__ void __launch_bounds__(32 * (BM / WM) * (BN / WN), MINB) name(const MmhParams p) { \
    mmh<T, BM, BN, WM, WN, BK, STAGES>(p);                                                              \
  }
#define MMH_KERNELS(name, T)                                                          \
  MMH_KERNEL(name##_64x64_32x32, T, 64, 64, 32, 32, MMH_BK, MMH_STAGES, 4)            \
  MMH_KERNEL(name##_128x64_64x32, T, 128, 64, 64, 32, MMH_BK, MMH_STAGES, 3)          \
  MMH_KERNEL(name##_128x128_64x32, T, 128, 128, 64, 32, MMH_BK, MMH_STAGES, 2)        \
  MMH_KERNEL(name##_128x128_64x64, T, 128, 128, 64, 64, MMH_BK, MMH_STAGES, 2)        \
  MMH_KERNEL(name##_128x256_64x64, T, 128, 256, 64, 64, MMH_BK, MMH_STAGES, 1)        \
  MMH_KERNEL(name##_256x128_64x64, T, 256, 128, 64, 64, MMH_BK, MMH_STAGES, 1)        \
  MMH_KERNEL(name##_64x64_32x32_k64s4, T, 64, 64, 32, 32, 64, 4, 3)                   \
  MMH_KERNEL(name##_128x128_64x32_k64s3, T, 128, 128, 64, 32, 64, 3, 2)               \
  MMH_KERNEL(name##_128x256_64x64_k64s3, T, 128, 256, 64, 64, 64, 3, 1)
MMH_KERNELS(mmh_f16, MMH_T_F16)
MMH_KERNELS(mmh_bf16, MMH_T_BF16)
