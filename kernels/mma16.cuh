// mma16.cuh: the pieces of the 16-bit tensor-core products that mmh.cu
// (F16 and BF16 weights) and mmhq.cu (quantized weights dequantized to
// f16) share: the cp.async copies to shared memory and their groups,
// ldmatrix.x4 and the lane offsets of its addresses, mma.sync m16n8k16
// with f32 accumulation (sm_80 and newer), and (mma_store.cuh) the epilogue.
// Both products stage their tiles as rows of LDS 16-bit values,
// k-contiguous: A (weight rows) and B (batch rows of X). Each keeps its
// own loops over the fragments and the accumulators: written once here as
// functions with loops, they would be unrolled before they are inlined,
// and the machine code would come out scheduled differently.
#pragma once

#include <stdint.h>
#include <stddef.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#include "mma_store.cuh"

// Type codes of the 16-bit operands, as gguf.Type.
#define MMA16_F16 1
#define MMA16_BF16 30

static __device__ __forceinline__ uint32_t mma16_smem(const void *p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}

// mma16_cp16 copies 16 bytes from global src to shared dst, or zero-fills
// them when valid is false (src is then not read, but must be a valid
// address).
static __device__ __forceinline__ void mma16_cp16(void *dst, const void *src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(mma16_smem(dst)), "l"(src), "r"(valid ? 16 : 0));
}
static __device__ __forceinline__ void mma16_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> static __device__ __forceinline__ void mma16_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// mma16_ldmatrix_x4 loads four 8×8 matrices of 16-bit values: lanes
// 8i..8i+7 give the addresses of the rows of matrix i, and register i of
// lane l holds row l/4, values 2(l%4) and 2(l%4)+1, of matrix i.
static __device__ __forceinline__ void mma16_ldmatrix_x4(uint32_t r[4], const uint16_t *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(mma16_smem(p)));
}

// mma16_ldmatrix_b2 loads the B fragments of two neighbouring n8 tiles,
// b0 and b1, with one ldmatrix.x4 (the lane's address from mma16_b_off).
static __device__ __forceinline__ void mma16_ldmatrix_b2(uint32_t b0[2], uint32_t b1[2], const uint16_t *p) {
  uint32_t r[4];
  mma16_ldmatrix_x4(r, p);
  b0[0] = r[0];
  b0[1] = r[1];
  b1[0] = r[2];
  b1[1] = r[3];
}

// Mma16<T> is c += a·b for a 16×16 tile a (row-major fragments) and a 16×8
// tile b (column-major), 16-bit values of type T, f32 accumulators.
// Fragment layouts of m16n8k16 (PTX ISA), with g = lane/4 and t = lane%4:
// A's registers hold rows g, g+8, g, g+8 at values 2t, 2t+1 (+8 for the
// last two); B's hold column g at values 2t, 2t+1 and 2t+8, 2t+9; C's are
// (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1).
template <int T> struct Mma16;
template <> struct Mma16<MMA16_F16> {
  static __device__ __forceinline__ void run(float c[4], const uint32_t a[4], const uint32_t b[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
  }
};
template <> struct Mma16<MMA16_BF16> {
  static __device__ __forceinline__ void run(float c[4], const uint32_t a[4], const uint32_t b[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
  }
};

// Lane offsets of the ldmatrix addresses in a staged tile of LDS-value
// rows: for A, lane l gives row l%16 at value 8·(l/16) of a 16-row tile
// (matrices: rows 0-7 and 8-15 at values 0-7, then at 8-15: A's a0..a3);
// for B, row l%8 + 8·(l/16) at value 8·((l/8)%2) of a 16-row pair of n8
// tiles (matrices: b0, b1 of the first tile, then of the second).
static __device__ __forceinline__ int mma16_a_off(int lane, int lds) { return (lane & 15) * lds + 8 * (lane >> 4); }
static __device__ __forceinline__ int mma16_b_off(int lane, int lds) {
  return ((lane & 7) + 8 * (lane >> 4)) * lds + 8 * ((lane >> 3) & 1);
}

// Mma16Seg is the matrix one block of a launch of one to three matrices
// multiplies: its index s, its weights (WT: uint16_t for mmh, uint8_t for
// mmhq) and rows, and bm, the block's first row in it.
template <class WT> struct Mma16Seg {
  const WT *w;
  int s, rows, bm;
};

// mma16_segment is the segment block row by of a launch of P (MmhParams,
// MmhqParams: fields nseg, w, y, rows, w1, y1, rows1, w2, y2, rows2)
// computes: the grid's rows are segment 0's ⌈rows/BM⌉ tiles, then segment
// 1's, then segment 2's. (The other fields stay read from the parameters,
// and the segment's Y is found at the end, mma16_segment_y: copying the
// struct, or holding Y through the products, made mmhq's 128 × 128 tile
// spill.)
template <int BM, class WT, class P> static __device__ __forceinline__ Mma16Seg<WT> mma16_segment(const P &p, int by) {
  Mma16Seg<WT> q = {p.w, 0, p.rows, 0};
  const int t0 = (p.rows + BM - 1) / BM;
  if (p.nseg > 1 && by >= t0) {
    by -= t0;
    const int t1 = (p.rows1 + BM - 1) / BM;
    if (p.nseg > 2 && by >= t1) {
      by -= t1;
      q.w = p.w2, q.s = 2, q.rows = p.rows2;
    } else {
      q.w = p.w1, q.s = 1, q.rows = p.rows1;
    }
  }
  q.bm = by * BM;
  return q;
}

// mma16_zero clears a warp's MT × NT accumulator tiles.
template <int MT, int NT> static __device__ __forceinline__ void mma16_zero(float (&acc)[MT][NT][4]) {
#pragma unroll
  for (int mi = 0; mi < MT; mi++)
#pragma unroll
    for (int ni = 0; ni < NT; ni++)
#pragma unroll
      for (int e = 0; e < 4; e++) acc[mi][ni][e] = 0.0f;
}

// mma16_block is the matrix block row by of a launch of P computes:
// mma16_segment's, or for a GLU launch (p.glu) the gate rows from
// by · BM/2 (and the same rows of up, p.w1).
template <int BM, class WT, class P> static __device__ __forceinline__ Mma16Seg<WT> mma16_block(const P &p, int by) {
  if (p.glu) return Mma16Seg<WT>{p.w, 0, p.rows, by * (BM / 2)};
  return mma16_segment<BM, WT>(p, by);
}

// mma16_segment_y is the Y of segment s of a launch of P.
template <class P> static __device__ __forceinline__ float *mma16_segment_y(const P &p, int s) {
  return s == 0 ? p.y : s == 1 ? p.y1 : p.y2;
}

// MMA16_SEG_LAYOUT writes the offsets of P's w1, w2, y1, y2, rows1 and rows2
// to out[i..i+5], for the layout kernels (mmh_layout, mmhq_layout).
#define MMA16_SEG_LAYOUT(out, i, P)                                                                  \
  do {                                                                                             \
    (out)[(i)] = offsetof(P, w1), (out)[(i) + 1] = offsetof(P, w2), (out)[(i) + 2] = offsetof(P, y1); \
    (out)[(i) + 3] = offsetof(P, y2), (out)[(i) + 4] = offsetof(P, rows1);                          \
    (out)[(i) + 5] = offsetof(P, rows2);                                                           \
  } while (0)

// mma16_glu is silu(g)·u (the swiglu kernel's arithmetic) rounded to the
// 16-bit type T, to nearest with ties to even, as its bits: the epilogue of
// a GLU launch (MmhParams.glu).
template <int T> static __device__ __forceinline__ uint16_t mma16_glu(float g, float u) {
  const float v = g / (1.f + expf(-g)) * u;
  if (T == MMA16_BF16) return __bfloat16_as_ushort(__float2bfloat16_rn(v));
  return __half_as_ushort(__float2half_rn(v));
}
