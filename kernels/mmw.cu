// mmw.cu: the 16-bit products of mmh.cu (Y[B×rows] = X·Wᵀ for F16 and
// BF16 weights, MmhParams, one to three segments, the residual add) on
// Hopper's warpgroup tensor-core instruction, wgmma.mma_async m64nNk16 with
// f32 accumulation, whose operands are read from shared memory by the
// tensor cores themselves (no ldmatrix, no fragments in registers).
//
// nvcc 11.8 knows neither wgmma nor the sm_90a target it needs, so this
// file is compiled to PTX only (nvcc -ptx, the wgmma instructions pass
// through as inline assembly) and the PTX's header is raised to ISA 8.0 and
// .target sm_90a (scripts/gpu-fatbin.sh); the driver compiles it when the
// module is loaded, on devices of compute capability 9.0 only (kernels
// loads it there, and without it the products stay on mmh.cu).
//
// A block is two warpgroups (256 threads): MMW_BM = 128 weight rows, 64 a
// warpgroup, by BN batch rows. The k axis runs in stages of 64 values (one
// 128-byte row of each operand), STAGES in a ring of shared memory, copied
// with cp.async into the 128-byte swizzled K-major layout wgmma reads
// (row r's 16-byte chunk c at chunk c ^ (r % 8) of its row; 8-row groups
// 1024 bytes apart, each tile 1024-byte aligned). A stage's four k steps
// are one wgmma group; the group of the stage before is waited for before
// its buffer is refilled, so the copies, the products of one stage and
// the barrier overlap. The accumulators are in mma.sync's C layout, a warp
// holding 16 weight rows: mma_store is the epilogue. A GLU launch
// (MmhParams.glu) computes 64 rows of gate in warpgroup 0 and the same rows
// of up in warpgroup 1, and writes silu(gate)·up rounded (mma16_glu).
#include <stdint.h>
#include <stddef.h>

#include "mma16.cuh"
#include "mmh_params.cuh"

#define MMW_BM 128
#define MMW_BK 64

// mmw_desc is the shared-memory matrix descriptor of a 128-byte swizzled
// K-major tile at p: start address / 16 (bits 0-13), leading byte offset
// (unused by this layout; 1), stride byte offset 1024 / 16 (8-row groups,
// bits 32-45), layout 1 = 128-byte swizzle (bits 62-63). Adding 2 to it
// moves the start 32 bytes (16 values) along k.
static __device__ __forceinline__ uint64_t mmw_desc(const void *p) {
  const uint32_t a = mma16_smem(p);
  return (uint64_t)((a & 0x3FFFF) >> 4) | ((uint64_t)1 << 16) | ((uint64_t)(1024 >> 4) << 32) | ((uint64_t)1 << 62);
}

static __device__ __forceinline__ void mmw_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
static __device__ __forceinline__ void mmw_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> static __device__ __forceinline__ void mmw_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// mmw_proxy_fence makes this thread's completed cp.async writes to shared
// memory visible to the tensor cores' reads (the async proxy).
static __device__ __forceinline__ void mmw_proxy_fence() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// MmwMma<T, N> is d += A·B for one k step of 16: A 64 weight rows, B N
// batch rows, both K-major in shared memory (descriptors da, db); d the
// warpgroup's N/2 accumulators a thread.
template <int T, int N> struct MmwMma;

// MMW_D32(i) is the accumulators d[i..i+32) as read-write asm operands.
#define MMW_D8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define MMW_D32(i) MMW_D8(i), MMW_D8(i + 8), MMW_D8(i + 16), MMW_D8(i + 24)

// The instruction for each N, its type spelled TY ("f16", "bf16").
#define MMW_MMA_N64(TY)                                                                        \
  asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, 1, 1, 1, 0, 0;\n" \
      : MMW_D32(0) : "l"(da), "l"(db))
#define MMW_MMA_N128(TY)                                                                        \
  asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, 1, 1, 1, 0, 0;\n" \
      : MMW_D32(0), MMW_D32(32) : "l"(da), "l"(db))
#define MMW_MMA_N256(TY)                                                                        \
  asm volatile("wgmma.mma_async.sync.aligned.m64n256k16.f32." TY "." TY " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, 1, 1, 1, 0, 0;\n" \
      : MMW_D32(0), MMW_D32(32), MMW_D32(64), MMW_D32(96) : "l"(da), "l"(db))
#define MMW_MMA(N)                                                                                 \
  template <> struct MmwMma<MMA16_F16, N> {                                                        \
    static __device__ __forceinline__ void run(float (&d)[N / 2], uint64_t da, uint64_t db) { MMW_MMA_N##N("f16"); }  \
  };                                                                                               \
  template <> struct MmwMma<MMA16_BF16, N> {                                                       \
    static __device__ __forceinline__ void run(float (&d)[N / 2], uint64_t da, uint64_t db) { MMW_MMA_N##N("bf16"); } \
  };
MMW_MMA(64)
MMW_MMA(128)
MMW_MMA(256)

// mmw is the product in 128 × BN tiles, STAGES stages in flight; grid
// (⌈batch/BN⌉, the segments' ⌈rows/128⌉ summed), 256 threads,
// STAGES·(128+BN)·64·2 + 1024 bytes of dynamic shared memory (the slack
// aligns the ring to 1024 bytes).
template <int T, int BN, int STAGES> static __device__ void mmw(const MmhParams &p) {
  constexpr int BM = MMW_BM, BK = MMW_BK, STAGE = (BM + BN) * BK; // 16-bit values a stage
  constexpr int JW = BM / 32, JX = BN / 32;                         // copies a thread, of W and X rows
  static_assert(BN % 32 == 0 && STAGES >= 3, "tile and staging");
  extern __shared__ __align__(128) uint16_t mmw_raw[];
  uint16_t *sm = mmw_raw + ((1024 - (mma16_smem(mmw_raw) & 1023)) & 1023) / 2;
  const Mma16Seg<uint16_t> sg = mma16_block<BM, uint16_t>(p, blockIdx.y);
  const int bm = sg.bm, bn = blockIdx.x * BN;
  const int tid = threadIdx.x, wg = tid >> 7, warp = (tid >> 5) & 3, lane = tid & 31;
  const int stages = (p.cols + BK - 1) / BK;

  // This thread copies chunk c of rows r8 + 32j of both tiles; the
  // swizzle of a row depends on r % 8, the same for all of them.
  const int c = tid & 7, r8 = tid >> 3, swz = 8 * (c ^ (r8 & 7));
  const uint16_t *wsrc[JW], *xsrc[JX];
  bool wok[JW], xok[JX];
  // (GLU: the first half of the tile's rows from gate, the second from up,
  // the same rows of each.)
#pragma unroll
  for (int j = 0; j < JW; j++) {
    const bool up = p.glu && j >= JW / 2;
    const int r = bm + r8 + 32 * (p.glu ? j % (JW / 2) : j);
    wok[j] = r < sg.rows;
    wsrc[j] = wok[j] ? (up ? p.w1 : sg.w) + (size_t)r * p.cols + 8 * c : sg.w;
  }
#pragma unroll
  for (int j = 0; j < JX; j++) {
    const int r = bn + r8 + 32 * j;
    xok[j] = r < p.batch;
    xsrc[j] = xok[j] ? p.x + (size_t)r * p.cols + 8 * c : p.x;
  }
  auto issue = [&](int s, int buf) {
    const bool kin = s * BK + 8 * c < p.cols;
    uint16_t *st = sm + buf * STAGE;
#pragma unroll
    for (int j = 0; j < JW; j++) {
      const bool v = wok[j] && kin;
      mma16_cp16(st + (r8 + 32 * j) * BK + swz, v ? wsrc[j] + s * BK : wsrc[j], v);
    }
#pragma unroll
    for (int j = 0; j < JX; j++) {
      const bool v = xok[j] && kin;
      mma16_cp16(st + (BM + r8 + 32 * j) * BK + swz, v ? xsrc[j] + s * BK : xsrc[j], v);
    }
  };

  float d[BN / 2];
#pragma unroll
  for (int i = 0; i < BN / 2; i++) d[i] = 0.0f;
#pragma unroll
  for (int s = 0; s < STAGES - 2; s++) {
    if (s < stages) issue(s, s);
    mma16_commit();
  }
  for (int s = 0; s < stages; s++) {
    mma16_wait<STAGES - 3>(); // stage s has landed (this thread's copies)
    mmw_proxy_fence();
    __syncthreads(); // everyone's; and the group of stage s-2 is done in both warpgroups
    {
      const int n = s + STAGES - 2;
      if (n < stages) issue(n, n % STAGES);
      mma16_commit();
    }
    const uint16_t *st = sm + (s % STAGES) * STAGE;
    const uint64_t da = mmw_desc(st + wg * 64 * BK), db = mmw_desc(st + BM * BK);
    mmw_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 16; kk++) MmwMma<T, BN>::run(d, da + 2 * kk, db + 2 * kk);
    mmw_commit();
    mmw_wait<1>();
  }
  mmw_wait<0>();
  mma16_wait<0>();
  if (p.glu) { // warpgroup 1 holds up's values, 0 gate's, for the same rows
    float *xs = (float *)sm;
    __syncthreads(); // every stage is consumed
    if (wg == 1) {
#pragma unroll
      for (int i = 0; i < BN / 2; i++) xs[i * 128 + (tid - 128)] = d[i];
    }
    __syncthreads();
    if (wg == 1) return;
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int i = 0; i < BN / 2; i++) {
      const int r = bm + warp * 16 + g + ((i >> 1) & 1) * 8, b = bn + (i >> 2) * 8 + 2 * t + (i & 1);
      if (r < p.rows && b < p.batch) p.h[(size_t)b * p.rows + r] = mma16_glu<T>(d[i], xs[i * 128 + tid]);
    }
    return;
  }
  float(&acc)[1][BN / 8][4] = *reinterpret_cast<float(*)[1][BN / 8][4]>(&d);
  mma_store(mma16_segment_y(p, sg.s), sg.rows, p.batch, p.accumulate, bm + wg * 64 + warp * 16, bn, lane, acc);
}

// mmw_<type>_128x<BN>_64x<BN>_k64s<STAGES>w, held to the registers that
// let MINB blocks share a multiprocessor.
#define MMW_KERNEL(name, T, BN, STAGES, MINB)                                           \
  extern "C" __global__ void __launch_bounds__(256, MINB) name(const MmhParams p) {     \
    mmw<T, BN, STAGES>(p);                                                              \
  }
#define MMW_KERNELS(name, T)                                                             \
  MMW_KERNEL(name##_128x64_64x64_k64s4w, T, 64, 4, 1)                                       \
  MMW_KERNEL(name##_128x64_64x64_k64s3w, T, 64, 3, 2)                                       \
  MMW_KERNEL(name##_128x128_64x128_k64s4w, T, 128, 4, 1)                                    \
  MMW_KERNEL(name##_128x128_64x128_k64s3w, T, 128, 3, 2)                                    \
  MMW_KERNEL(name##_128x256_64x256_k64s3w, T, 256, 3, 1)
MMW_KERNELS(mmw_f16, MMA16_F16)
MMW_KERNELS(mmw_bf16, MMA16_BF16)
