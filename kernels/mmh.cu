// mmh.cu: matrix-matrix products Y[B×rows] = X[B×cols] · Wᵀ on the tensor
// cores for 16-bit float weights (F16 and BF16 as stored: row-major
// [rows][cols], cols a multiple of 8), with mma.sync m16n8k16 and f32
// accumulation (sm_80 and newer).
//
// Two launches:
//   - mmh_convert_<type> rounds X (f32) to the weights' type, to nearest
//     with ties to even, into a scratch buffer of B × cols 16-bit values;
//   - mmh_<type>_<BM>x<BN>_<WM>x<WN>[_k<BK>s<STAGES>] multiplies X by one
//     to three matrices of one width (Q, K and V; gate and up), each block
//     in one of them (mma16_segment): a block
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
// The copies, ldmatrix, mma and the store of a result are mma16.cuh's,
// which mmhq.cu shares. The parameters travel as one struct by value,
// MmhParams, whose layout the Go side (mmhParams in mmh_cuda.go) mirrors;
// mmh_layout writes its offsets for the test that checks both agree.
#include <stdint.h>
#include <stddef.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#include "mma16.cuh"
#include "mmh_params.cuh"

#define MMH_BK 32    // k values per stage, unless a kernel names its own
#define MMH_STAGES 4 // stages in flight, unless a kernel names its own
#define MMH_PAD 8    // 16-bit values of padding past a staged row (16 bytes)

// Type codes, as gguf.Type (mma16.cuh).
#define MMH_T_F16 MMA16_F16
#define MMH_T_BF16 MMA16_BF16

// MmhParams (mmh_params.cuh) is one product; mmw.cu takes it too.

// mmh_layout writes sizeof(MmhParams) and the offset of each field, in
// declaration order (pad_ left out), to out[0..17], then MMH_BK, MMH_STAGES
// and MMH_PAD to out[18..20], for the layout test.
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
  out[9] = offsetof(MmhParams, nseg);
  MMA16_SEG_LAYOUT(out, 10, MmhParams);
  out[16] = offsetof(MmhParams, glu);
  out[17] = offsetof(MmhParams, h);
  out[18] = MMH_BK;
  out[19] = MMH_STAGES;
  out[20] = MMH_PAD;
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

// mmh_glu_store is the epilogue of a GLU launch (MmhParams.glu): the warps
// of the second half of a block's weight rows hold up's values, those of the
// first half gate's for the same rows and batch rows. The up warps leave
// their accumulators in shared memory (every stage is consumed), and each
// gate warp reads its twin's, in the same fragment order, and writes
// silu(g)·u rounded to T (mma16_glu) into h; values
// past rows or batch are dropped.
template <int T, int BM, int BN, int WM, int WN, int MT, int NT>
static __device__ __forceinline__ void mmh_glu_store(const MmhParams &p, uint16_t *smem, int bm, int bn, int warp, int lane,
                                                     float (&acc)[MT][NT][4]) {
  constexpr int WR = BM / WM, HALF = WR / 2;
  static_assert(WR % 2 == 0, "a GLU tile holds gate and up warps in equal numbers");
  float *xs = (float *)smem;
  const int wi = warp % WR, wcol = warp / WR;
  __syncthreads(); // every warp is done with the stages
  if (wi >= HALF) {
    float *dst = xs + (size_t)((wi - HALF) + HALF * wcol) * MT * NT * 4 * 32;
#pragma unroll
    for (int mi = 0; mi < MT; mi++)
#pragma unroll
      for (int ni = 0; ni < NT; ni++)
#pragma unroll
        for (int e = 0; e < 4; e++) dst[((mi * NT + ni) * 4 + e) * 32 + lane] = acc[mi][ni][e];
  }
  __syncthreads();
  if (wi >= HALF) return;
  const float *src = xs + (size_t)(wi + HALF * wcol) * MT * NT * 4 * 32;
  const int g = lane >> 2, t = lane & 3;
  const int r0 = bm + wi * WM, b0 = bn + wcol * WN;
#pragma unroll
  for (int mi = 0; mi < MT; mi++)
#pragma unroll
    for (int ni = 0; ni < NT; ni++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const int r = r0 + mi * 16 + g + (e >> 1) * 8, b = b0 + ni * 8 + 2 * t + (e & 1);
        const float gv = acc[mi][ni][e], u = src[((mi * NT + ni) * 4 + e) * 32 + lane];
        if (r < p.rows && b < p.batch) p.h[(size_t)b * p.rows + r] = mma16_glu<T>(gv, u);
      }
}

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

  // init_glu takes tile row i < N/2 from row r0 + i of gate and row i ≥ N/2
  // from row r0 + i - N/2 of up (rows of cols values, limit of each).
  __device__ __forceinline__ void init_glu(const uint16_t *gate, const uint16_t *up, int r0, int limit, int cols) {
    c8 = 8 * (threadIdx.x % CHUNKS);
#pragma unroll
    for (int j = 0; j < J; j++) {
      const int i = threadIdx.x / CHUNKS + j * (THREADS / CHUNKS);
      const int r = r0 + (i < N / 2 ? i : i - N / 2);
      ok[j] = r < limit;
      src[j] = ok[j] ? (i < N / 2 ? gate : up) + (size_t)r * cols + c8 : gate;
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
      mma16_cp16(dst + i * LDS + c8, v ? src[j] + s * BK : src[j], v);
    }
  }
};

// mmh is the product for weights of type T in BM × BN tiles of Y, one warp
// per WM × WN sub-tile; grid (ceil(batch/BN), the segments' ceil(rows/BM)
// summed, mma16_segment): the blocks
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
  const Mma16Seg<uint16_t> sg = p.glu ? Mma16Seg<uint16_t>{p.w, 0, p.rows, (int)blockIdx.y * (BM / 2)}
                                       : mma16_segment<BM, uint16_t>(p, blockIdx.y);
  const int bm = sg.bm, bn = blockIdx.x * BN;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int wr = (warp % (BM / WM)) * WM, wc = (warp / (BM / WM)) * WN;
  const int stages = (p.cols + BK - 1) / BK;
  float acc[MT][NT][4];
  mma16_zero(acc);

  // The first STAGES-1 stages; a group is committed for each, empty
  // past the last stage, so that the wait counts below hold throughout.
  MmhRows<BM, THREADS, BK> wrows;
  MmhRows<BN, THREADS, BK> xrows;
  if (p.glu) wrows.init_glu(p.w, p.w1, bm, p.rows, p.cols);
  else wrows.init(sg.w, bm, sg.rows, p.cols);
  xrows.init(p.x, bn, p.batch, p.cols);
#pragma unroll
  for (int s = 0; s < STAGES - 1; s++) {
    if (s < stages) {
      uint16_t *st = mmh_shared + s * STAGE;
      wrows.issue(st, s, p.cols);
      xrows.issue(st + BM * LDS, s, p.cols);
    }
    mma16_commit();
  }
  // Lane offsets of the ldmatrix addresses: A is W's rows, B X's.
  const int a_off = mma16_a_off(lane, LDS), b_off = mma16_b_off(lane, LDS);
  for (int s = 0; s < stages; s++) {
    mma16_wait<STAGES - 2>(); // stage s has landed (this thread's copies)
    __syncthreads();          // everyone's copies, and stage s-1 is consumed
    {
      const int n = s + STAGES - 1; // refills the buffer of stage s-1
      if (n < stages) {
        uint16_t *st = mmh_shared + (n % STAGES) * STAGE;
        wrows.issue(st, n, p.cols);
        xrows.issue(st + BM * LDS, n, p.cols);
      }
      mma16_commit();
    }
    const uint16_t *sw = mmh_shared + (s % STAGES) * STAGE;
    const uint16_t *sx = sw + BM * LDS;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      uint32_t a[MT][4], b[NT][2];
#pragma unroll
      for (int mi = 0; mi < MT; mi++) mma16_ldmatrix_x4(a[mi], sw + (wr + 16 * mi) * LDS + kk + a_off);
#pragma unroll
      for (int nj = 0; nj < NT / 2; nj++) mma16_ldmatrix_b2(b[2 * nj], b[2 * nj + 1], sx + (wc + 16 * nj) * LDS + kk + b_off);
#pragma unroll
      for (int mi = 0; mi < MT; mi++)
#pragma unroll
        for (int ni = 0; ni < NT; ni++) Mma16<T>::run(acc[mi][ni], a[mi], b[ni]);
    }
  }
  mma16_wait<0>(); // no copies outstanding at exit (the trailing groups are empty)
  if (p.glu) {
    mmh_glu_store<T, BM, BN, WM, WN>(p, mmh_shared, bm, bn, warp, lane, acc);
    return;
  }
  mma_store(mma16_segment_y(p, sg.s), sg.rows, p.batch, p.accumulate, bm + wr, bn + wc, lane, acc);
}

// MmhCopies is MmhRows for mmh_pipe: one thread's share of the copies of
// an N-row tile, as 32-bit offsets (row × cols) from its chunk of row 0,
// rows past the matrix's limit clamped to its last row (their products land
// in values the epilogue drops; the k tail past cols is zero-filled). The
// Go side runs mmh_pipe only on matrices of fewer than 2³² values.
template <int N, int THREADS, int BK> struct MmhCopies {
  static constexpr int CHUNKS = BK / 8, LDS = BK + MMH_PAD;
  static constexpr int J = N * CHUNKS / THREADS;
  static_assert(N * CHUNKS % THREADS == 0 && THREADS % CHUNKS == 0, "whole copies per thread");
  const uint16_t *base;  // the matrix at this thread's chunk of row 0
  const uint16_t *base1; // the same, or (init_glu) up's for copies of the second half
  uint32_t off[J];       // row j's offset from base (base1)
  int c8;               // the chunk's first value in a staged row

  __device__ __forceinline__ void init(const uint16_t *m, int r0, int limit, int cols) {
    c8 = 8 * (threadIdx.x % CHUNKS);
    base = base1 = m + c8;
#pragma unroll
    for (int j = 0; j < J; j++) {
      const int r = min(r0 + (int)threadIdx.x / CHUNKS + j * (THREADS / CHUNKS), limit - 1);
      off[j] = (uint32_t)r * (uint32_t)cols;
    }
  }

  // init_glu is MmhRows::init_glu: gate's rows, then up's (copy j's half
  // is j's alone: the rows a copy index covers step by THREADS/CHUNKS,
  // which divides N/2).
  __device__ __forceinline__ void init_glu(const uint16_t *gate, const uint16_t *up, int r0, int limit, int cols) {
    static_assert(N / 2 % (THREADS / CHUNKS) == 0, "a copy index within one half");
    c8 = 8 * (threadIdx.x % CHUNKS);
    base = gate + c8;
    base1 = up + c8;
#pragma unroll
    for (int j = 0; j < J; j++) {
      const int i = threadIdx.x / CHUNKS + j * (THREADS / CHUNKS);
      off[j] = (uint32_t)min(r0 + (i < N / 2 ? i : i - N / 2), limit - 1) * (uint32_t)cols;
    }
  }

  // issue queues copies j0 ≤ j < j1 of k stage s into dst (N rows of LDS
  // values).
  // (j0 and j1 are constants once the caller's loops are unrolled.)
  __device__ __forceinline__ void issue(uint16_t *dst, int s, int cols, int j0, int j1) const {
    const int k = s * BK;
    const bool kin = k + c8 < cols;
#pragma unroll
    for (int j = 0; j < J; j++) {
      if (j < j0 || j >= j1) continue;
      const int i = threadIdx.x / CHUNKS + j * (THREADS / CHUNKS);
      const uint16_t *b = j * (THREADS / CHUNKS) < N / 2 ? base : base1;
      mma16_cp16(dst + i * LDS + c8, kin ? b + off[j] + k : base, kin);
    }
  }
};

// mmh_pipe is mmh with the fragments of the next k step read while the
// current one is multiplied (two sets of A and B fragments; across a stage
// boundary too, the wait and the barrier placed before the last k step's
// products), and the copies of a stage spread over the k steps of the one
// before. The same products in the same k order as mmh: the same bits.
template <int T, int BM, int BN, int WM, int WN, int BK, int STAGES> static __device__ void mmh_pipe(const MmhParams &p) {
  constexpr int LDS = BK + MMH_PAD;
  constexpr int THREADS = 32 * (BM / WM) * (BN / WN);
  constexpr int MT = WM / 16, NT = WN / 8;
  constexpr int STAGE = (BM + BN) * LDS;
  constexpr int KK = BK / 16;
  static_assert(WM % 16 == 0 && WN % 16 == 0 && BM % WM == 0 && BN % WN == 0, "tile shapes");
  static_assert(KK % 2 == 0 && STAGES >= 2, "staging: an even count of k steps a stage");
  extern __shared__ __align__(128) uint16_t mmh_shared[];
  const Mma16Seg<uint16_t> sg = p.glu ? Mma16Seg<uint16_t>{p.w, 0, p.rows, (int)blockIdx.y * (BM / 2)}
                                       : mma16_segment<BM, uint16_t>(p, blockIdx.y);
  const int bm = sg.bm, bn = blockIdx.x * BN;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int wr = (warp % (BM / WM)) * WM, wc = (warp / (BM / WM)) * WN;
  const int stages = (p.cols + BK - 1) / BK;
  float acc[MT][NT][4];
  mma16_zero(acc);

  MmhCopies<BM, THREADS, BK> wcp;
  MmhCopies<BN, THREADS, BK> xcp;
  constexpr int JW = MmhCopies<BM, THREADS, BK>::J, JX = MmhCopies<BN, THREADS, BK>::J;
  if (p.glu) wcp.init_glu(p.w, p.w1, bm, p.rows, p.cols);
  else wcp.init(sg.w, bm, sg.rows, p.cols);
  xcp.init(p.x, bn, p.batch, p.cols);
#pragma unroll
  for (int s = 0; s < STAGES - 1; s++) {
    if (s < stages) {
      uint16_t *st = mmh_shared + s * STAGE;
      wcp.issue(st, s, p.cols, 0, JW);
      xcp.issue(st + BM * LDS, s, p.cols, 0, JX);
    }
    mma16_commit();
  }
  mma16_wait<STAGES - 2>();
  __syncthreads();

  const int a_off = mma16_a_off(lane, LDS), b_off = mma16_b_off(lane, LDS);
  uint32_t a[2][MT][4], b[2][NT][2];
  int rs = 0, ws = STAGES - 1; // the buffers read and written
  const uint16_t *sw = mmh_shared;
#pragma unroll
  for (int mi = 0; mi < MT; mi++) mma16_ldmatrix_x4(a[0][mi], sw + (wr + 16 * mi) * LDS + a_off);
#pragma unroll
  for (int nj = 0; nj < NT / 2; nj++) mma16_ldmatrix_b2(b[0][2 * nj], b[0][2 * nj + 1], sw + BM * LDS + (wc + 16 * nj) * LDS + b_off);
  for (int s = 0; s < stages; s++) {
    const int n = s + STAGES - 1; // the stage whose copies this one issues
    uint16_t *st = mmh_shared + ws * STAGE;
#pragma unroll
    for (int kk = 0; kk < KK; kk++) {
      if (n < stages) {
        wcp.issue(st, n, p.cols, kk * JW / KK, (kk + 1) * JW / KK);
        xcp.issue(st + BM * LDS, n, p.cols, kk * JX / KK, (kk + 1) * JX / KK);
      }
      if (kk == KK - 1) {
        mma16_commit();
        mma16_wait<STAGES - 2>(); // stage s+1 has landed (this thread's copies)
        __syncthreads();          // everyone's, and stage s's reads are done
        rs = rs + 1 == STAGES ? 0 : rs + 1;
        ws = ws + 1 == STAGES ? 0 : ws + 1;
        sw = mmh_shared + rs * STAGE;
      }
      const int kn = ((kk + 1) % KK) * 16, f = (kk + 1) % 2;
#pragma unroll
      for (int mi = 0; mi < MT; mi++) mma16_ldmatrix_x4(a[f][mi], sw + (wr + 16 * mi) * LDS + kn + a_off);
#pragma unroll
      for (int nj = 0; nj < NT / 2; nj++)
        mma16_ldmatrix_b2(b[f][2 * nj], b[f][2 * nj + 1], sw + BM * LDS + (wc + 16 * nj) * LDS + kn + b_off);
#pragma unroll
      for (int mi = 0; mi < MT; mi++)
#pragma unroll
        for (int ni = 0; ni < NT; ni++) Mma16<T>::run(acc[mi][ni], a[kk % 2][mi], b[kk % 2][ni]);
    }
  }
  mma16_wait<0>();
  if (p.glu) {
    mmh_glu_store<T, BM, BN, WM, WN>(p, mmh_shared, bm, bn, warp, lane, acc);
    return;
  }
  mma_store(mma16_segment_y(p, sg.s), sg.rows, p.batch, p.accumulate, bm + wr, bn + wc, lane, acc);
}

// The kernels: mmh_<type>_<BM>x<BN>_<WM>x<WN>[_k<BK>s<STAGES>], each held
// to the registers that let MINB blocks share a multiprocessor.
#define MMH_KERNEL(name, T, BM, BN, WM, WN, BK, STAGES, MINB)                                           \
  extern "C" __global__ void __launch_bounds__(32 * (BM / WM) * (BN / WN), MINB) name(const MmhParams p) { \
    mmh<T, BM, BN, WM, WN, BK, STAGES>(p);                                                              \
  }
#define MMH_PKERNEL(name, T, BM, BN, WM, WN, BK, STAGES, MINB)                                          \
  extern "C" __global__ void __launch_bounds__(32 * (BM / WM) * (BN / WN), MINB) name(const MmhParams p) { \
    mmh_pipe<T, BM, BN, WM, WN, BK, STAGES>(p);                                                         \
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
  MMH_KERNEL(name##_128x256_64x64_k64s3, T, 128, 256, 64, 64, 64, 3, 1)           \
  MMH_KERNEL(name##_256x128_64x64_k64s3, T, 256, 128, 64, 64, 64, 3, 1)           \
  MMH_KERNEL(name##_128x128_64x64_k64s3, T, 128, 128, 64, 64, 64, 3, 2)           \
  MMH_KERNEL(name##_128x256_64x64_k64s4, T, 128, 256, 64, 64, 64, 4, 1)            \
  MMH_PKERNEL(name##_128x128_64x64_k64s3p, T, 128, 128, 64, 64, 64, 3, 2)         \
  MMH_PKERNEL(name##_128x128_64x64_k32s4p, T, 128, 128, 64, 64, 32, 4, 2)         \
  MMH_PKERNEL(name##_128x256_64x64_k64s3p, T, 128, 256, 64, 64, 64, 3, 1)         \
  MMH_PKERNEL(name##_256x128_64x64_k64s3p, T, 256, 128, 64, 64, 64, 3, 1)         \
  MMH_PKERNEL(name##_128x256_64x64_k32s4p, T, 128, 256, 64, 64, 32, 4, 1)
MMH_KERNELS(mmh_f16, MMH_T_F16)
MMH_KERNELS(mmh_bf16, MMH_T_BF16)
