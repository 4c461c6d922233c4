// mmhq.cu: matrix-matrix products Y[B×rows] = X[B×cols] · Wᵀ on the 16-bit
// tensor cores for quantized W (Q4_0, Q8_0, Q4_K, Q5_K and Q6_K as stored, Q8_0
// and Q6_K in the wide layout of kernels/wide.go): the weights are
// dequantized to f16 in shared memory, stage by stage, and multiplied with
// mma.sync m16n8k16 and f32 accumulation as mmh.cu multiplies F16 weights
// (sm_80 and newer).
//
// X is rounded to f16 first by mmh_convert_f16 (mmh.cu) into a scratch
// buffer of B × cols values. Then mmhq_<kind>_<BM>x<BN>_<WM>x<WN>_k64s<S>
// computes a BM × BN tile of Y (BM weight rows by BN batch rows) per
// block, one warp per WM × WN sub-tile. The k axis runs in stages of
// MMHQ_BK = 64 values; S stages are in flight, each holding
//   - the X tile: BN rows of 64 f16 values (cp.async, 16-byte chunks),
//     rows padded by MMHQ_PAD values as in mmh.cu;
//   - the raw W tile: the quantized bytes of the stage's 64 values of BM
//     weight rows, copied from global memory with cp.async
//     (WRaw<K>::copy), at WRaw<K>::stride bytes a row.
// One further tile, Wh, holds the current stage's W dequantized to f16
// (BM rows of 64 values, padded like X): after the barrier that makes
// stage s visible, every thread dequantizes 8-value chunks of the raw tile
// (WRaw<K>::deq8, the formulas of quant.cuh's Chunk<T>: each value is
// computed in f32 and rounded to f16 to nearest even once) into Wh; a
// second barrier, then the warps read Wh and X with ldmatrix.x4 exactly
// as mmh does (the copies, ldmatrix, mma and the store of a result are
// mma16.cuh's, which both share). Dequantizing into shared memory rather than registers: the
// warps of a block that share W rows (BN/WN of them) would each dequantize
// the same values again, and ldmatrix gives the mma fragments for free.
// Every value of Y sums its products in k order, 16 at a time, the same in
// every tile, staging and batch; the epilogue writes Y, or adds to it
// (accumulate: the residual connection).
//
// The parameters travel as one struct by value, MmhqParams, whose layout
// the Go side (mmhqParams in mmhq_cuda.go) mirrors; mmhq_layout writes its
// offsets and the raw strides for the test that checks both agree. The
// CPU model of the raw staging and the dequantization (mmhq_model_test.go)
// mirrors WRaw<K> line for line.
#include <stdint.h>
#include <stddef.h>
#include <cuda_fp16.h>

#include "mma16.cuh"
#include "quant.cuh"

#define MMHQ_BK 64 // k values per stage
#define MMHQ_PAD 8 // 16-bit values of padding past a staged X or Wh row (16 bytes)

// Layout codes: gguf.Type, plus MMHQ_WIDE for the wide layout.
#define MMHQ_WIDE 256

// MmhqParams is one product: one input X times one to three matrices of
// one layout and width (segments: w, y, rows, then w1, y1, rows1 and w2,
// y2, rows2, as MmhParams), each into its own Y. Pointers are device
// addresses, w's and x 16-byte aligned; cols is a multiple of 64 (of 256
// for Q4_K, Q5_K, Q6_K and the wide layouts).
struct MmhqParams {
  const uint8_t *w;    // rows × row_bytes: the weights, in their storage layout
  const uint16_t *x;   // batch × cols: X rounded to f16 (mmh_convert_f16)
  float *y;            // batch × rows: the result
  long long row_bytes; // stored size of one weight row (of every segment)
  int rows;            // rows of W (columns of Y)
  int cols;            // columns of W and X
  int batch;           // rows of X and Y
  int accumulate;      // 1: y += X·Wᵀ; 0: y = X·Wᵀ
  int nseg;            // segments, 1 to 3
  int pad;             // unused, aligns what follows
  const uint8_t *w1, *w2; // the second and third segments' weights
  float *y1, *y2;         // and results
  int rows1, rows2;       // and rows
};

static_assert(sizeof(MmhqParams) == 96, "MmhqParams is 96 bytes (mmhqParams in mmhq_cuda.go)");
static_assert(offsetof(MmhqParams, row_bytes) == 24, "MmhqParams.row_bytes at 24");
static_assert(offsetof(MmhqParams, accumulate) == 44, "MmhqParams.accumulate at 44");
static_assert(offsetof(MmhqParams, rows2) == 92, "MmhqParams.rows2 at 92");

// mmhq_cp4 copies the first n (0..4) bytes of the 4-byte aligned word at
// global src to shared dst and zero-fills the rest of the word (src is not
// read when n is 0).
static __device__ __forceinline__ void mmhq_cp4(void *dst, const void *src, int n) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(mma16_smem(dst)), "l"(src), "r"(n));
}
// mmhq_cp8 copies 8 bytes from global src to shared dst (both 8-byte
// aligned), or zero-fills them when valid is false (src is then not read).
static __device__ __forceinline__ void mmhq_cp8(void *dst, const void *src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(mma16_smem(dst)), "l"(src), "r"(valid ? 8 : 0));
}

// pack8 rounds eight floats to f16 (to nearest, ties to even), the lower
// index in the lower half of each word.
static __device__ __forceinline__ uint4 pack8(const float v[8]) {
  uint32_t u[4];
#pragma unroll
  for (int i = 0; i < 4; i++) {
    const __half2 h = __floats2half2_rn(v[2 * i], v[2 * i + 1]);
    u[i] = *(const uint32_t *)&h;
  }
  return make_uint4(u[0], u[1], u[2], u[3]);
}

// WRaw<K> is how a stage of W rows of layout K sits in shared memory:
// stride bytes per row; pieces copies per row and stage, copy queueing
// piece u (< pieces) of stage s of the row at global src (valid: the row
// is within the matrix; when not, the piece is zero-filled and src is only
// an address to name) into the staged row dst; deq8 writing values
// 8c..8c+7 (c < 8) of stage s of a staged row as floats.
template <int K> struct WRaw;

// WRawWords<BYTES> stages rows of 4-byte aligned stages of BYTES bytes
// each (stage s at BYTES·s), as BYTES/4 word copies a stage: the copy of
// the layouts whose blocks are stored back to back.
template <int BYTES> struct WRawWords {
  static_assert(BYTES % 4 == 0, "whole words a stage");
  static constexpr int pieces = BYTES / 4;
  static __device__ __forceinline__ void copy(uint8_t *dst, const uint8_t *src, bool valid, int s, int u, const MmhqParams &) {
    mmhq_cp4(dst + 4 * u, valid ? src + BYTES * s + 4 * u : src, valid ? 4 : 0);
  }
};

// Q8_0 as stored: 34-byte blocks (f16 d, int8 q[32]); rows of a multiple
// of 64 values are 68·n bytes, so a stage (two blocks, 68 bytes at 68s) is
// 17 aligned words.
template <> struct WRaw<T_Q8_0> : WRawWords<68> {
  static constexpr int stride = 80;
  static __device__ __forceinline__ void deq8(const uint8_t *row, int, int c, float v[8]) {
    const uint8_t *b = row + 34 * (c >> 2);
    const float d = h2f(ld16(b));
    const uint8_t *q = b + 2 + 8 * (c & 3);
#pragma unroll
    for (int i = 0; i < 2; i++) {
      const uint32_t w = ld16x2(q + 4 * i) ^ 0x80808080u; // int8 + 128
#pragma unroll
      for (int k = 0; k < 4; k++) v[4 * i + k] = d * b2f(w, k, 128.f);
    }
  }
};

// Q8_0 wide: a row's int8 values (block j at 32j), then its f16 scales (at
// cols + 2j). A staged row: the stage's 64 values (four 16-byte chunks at
// 64s), then its two scales (one word at cols + 4s).
template <> struct WRaw<T_Q8_0 + MMHQ_WIDE> {
  static constexpr int stride = 80, pieces = 5;
  static __device__ __forceinline__ void copy(uint8_t *dst, const uint8_t *src, bool valid, int s, int u, const MmhqParams &p) {
    if (u < 4) {
      mma16_cp16(dst + 16 * u, valid ? src + 64 * s + 16 * u : src, valid);
    } else {
      mmhq_cp4(dst + 64, valid ? src + p.cols + 4 * s : src, valid ? 4 : 0);
    }
  }
  static __device__ __forceinline__ void deq8(const uint8_t *row, int, int c, float v[8]) {
    const float d = h2f(ld16(row + 64 + 2 * (c >> 2)));
    const uint2 q = *(const uint2 *)(row + 8 * c);
    const uint32_t w[2] = {q.x ^ 0x80808080u, q.y ^ 0x80808080u};
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
      for (int k = 0; k < 4; k++) v[4 * i + k] = d * b2f(w[i], k, 128.f);
  }
};

// Q4_0 as stored: 18-byte blocks (f16 d, q[16]: value l the low nibble of
// q[l], value l+16 the high one, both less 8); a stage is two blocks, 36
// bytes at 36s: 9 aligned words.
template <> struct WRaw<T_Q4_0> : WRawWords<36> {
  static constexpr int stride = 48;
  static __device__ __forceinline__ void deq8(const uint8_t *row, int, int c, float v[8]) {
    const uint8_t *b = row + 18 * (c >> 2);
    const float d = h2f(ld16(b));
    const int m = c & 3; // values 8m..8m+7 of the block: bytes 8(m%2).., nibble m/2
    const uint8_t *q = b + 2 + 8 * (m & 1);
    const int sh = 4 * (m >> 1);
#pragma unroll
    for (int i = 0; i < 2; i++) {
      const uint32_t n = (ld16x2(q + 4 * i) >> sh) & 0x0F0F0F0Fu;
#pragma unroll
      for (int k = 0; k < 4; k++) v[4 * i + k] = d * b2f(n, k, 8.f);
    }
  }
};

// Q4_K: 144-byte super-blocks (f16 d, dmin, scales[12], qs[128]: 32-value
// chunk j is nibble j%2 of qs[32(j/2)..+32), scale and min j). Stage s is
// quarter q = s%4 of super-block s/4: chunks 2q and 2q+1, both in
// qs[32q..+32). A staged row: the 16-byte head, then those 32 bytes.
template <> struct WRaw<T_Q4_K> {
  static constexpr int stride = 48, pieces = 3;
  static __device__ __forceinline__ void copy(uint8_t *dst, const uint8_t *src, bool valid, int s, int u, const MmhqParams &) {
    const int off = 144 * (s >> 2) + (u == 0 ? 0 : 16 + 32 * (s & 3) + 16 * (u - 1));
    mma16_cp16(dst + 16 * u, valid ? src + off : src, valid);
  }
  static __device__ __forceinline__ void deq8(const uint8_t *row, int s, int c, float v[8]) {
    const uint4 hdr = *(const uint4 *)row;
    const float d = h2f(hdr.x & 0xFFFF), dmin = h2f(hdr.x >> 16);
    const int g = c >> 2; // chunk 2q+g of the super-block: nibble g
    float sc, m;
    k4scale_hdr(hdr, 2 * (s & 3) + g, &sc, &m);
    const float dl = d * sc, ml = dmin * m;
    const uint2 q = *(const uint2 *)(row + 16 + 8 * (c & 3));
    const uint32_t w[2] = {q.x, q.y};
#pragma unroll
    for (int i = 0; i < 2; i++) {
      const uint32_t n = (w[i] >> (4 * g)) & 0x0F0F0F0Fu;
#pragma unroll
      for (int k = 0; k < 4; k++) v[4 * i + k] = dl * b2f(n, k) - ml;
    }
  }
};

// Q5_K: 176-byte super-blocks (f16 d, dmin, scales[12], qh[32]: bit j of
// qh[l] is the fifth bit of value l of 32-value chunk j, qs[128] as Q4_K).
// Stage s is quarter q = s%4 of super-block s/4 (chunks 2q, 2q+1). A
// staged row: the 16-byte head, all of qh, then qs[32q..+32].
template <> struct WRaw<T_Q5_K> {
  static constexpr int stride = 80, pieces = 5;
  static __device__ __forceinline__ void copy(uint8_t *dst, const uint8_t *src, bool valid, int s, int u, const MmhqParams &) {
    const int off = 176 * (s >> 2) + (u < 3 ? 16 * u : 48 + 32 * (s & 3) + 16 * (u - 3));
    mma16_cp16(dst + 16 * u, valid ? src + off : src, valid);
  }
  static __device__ __forceinline__ void deq8(const uint8_t *row, int s, int c, float v[8]) {
    const uint4 hdr = *(const uint4 *)row;
    const float d = h2f(hdr.x & 0xFFFF), dmin = h2f(hdr.x >> 16);
    const int g = c >> 2, j = 2 * (s & 3) + g; // chunk j of the super-block: nibble g, fifth bit j
    float sc, m;
    k4scale_hdr(hdr, j, &sc, &m);
    const float dl = d * sc, ml = dmin * m;
    const uint2 q = *(const uint2 *)(row + 48 + 8 * (c & 3));
    const uint2 h = *(const uint2 *)(row + 16 + 8 * (c & 3));
    const uint32_t w[2] = {q.x, q.y}, hb[2] = {h.x, h.y};
#pragma unroll
    for (int i = 0; i < 2; i++) {
      const uint32_t n = ((w[i] >> (4 * g)) & 0x0F0F0F0Fu) | (((hb[i] >> j) & 0x01010101u) << 4);
#pragma unroll
      for (int k = 0; k < 4; k++) v[4 * i + k] = dl * b2f(n, k) - ml;
    }
  }
};

// Q6_K (ql[128], qh[64], int8 scales[16], f16 d; 210 bytes as stored, 224
// in the wide layout). Stage s is quarter q = s%4 of super-block s/4, in
// half n = q/2 with p = q%2: its 32-value chunks 2q+g (g = 0, 1) take
// nibble p of ql[64n + 32g + l], bits 2(2p+g) of qh[32n + l] on top, less
// 32, scale 8n + 4p + 2g + l/16 (quant.cuh's Chunk<T_Q6_K> with r = 2p+g).
// q6_deq8 computes values 8c..8c+7 from the staged ql (64 bytes), qh (32)
// and the stage's 4 scales, 4-byte aligned (A4) or 2-byte aligned.
template <bool A4>
static __device__ __forceinline__ void q6_deq8(const uint8_t *ql, const uint8_t *qh, const uint8_t *sc, float d, int s, int c,
                                               float v[8]) {
  const int g = c >> 2, l0 = 8 * (c & 3), p = s & 1;
  const float dd = d * (float)(int8_t)sc[2 * g + (l0 >> 4)];
#pragma unroll
  for (int i = 0; i < 2; i++) {
    const uint8_t *a = ql + 32 * g + l0 + 4 * i, *b = qh + l0 + 4 * i;
    const uint32_t lo = ((A4 ? ld32(a) : ld16x2(a)) >> (4 * p)) & 0x0F0F0F0Fu;
    const uint32_t hi = ((A4 ? ld32(b) : ld16x2(b)) >> (2 * (2 * p + g))) & 0x03030303u;
    const uint32_t n = lo | (hi << 4);
#pragma unroll
    for (int k = 0; k < 4; k++) v[4 * i + k] = dd * b2f(n, k, 32.f);
  }
}

// Q6_K wide (224-byte blocks: ql, qh, scales, d at 0, 128, 192, 208). A
// staged row: the half's ql (eight 8-byte chunks at 64n), its qh (four at
// 128 + 32n), the stage's 4 scales (a word at 192 + 8n + 4p) and d (a word
// at 208): at 0, 64, 96 and 100, 104 bytes. (8-byte chunks: a stride of
// 104 rather than the 112 16-byte ones would need lets two blocks of the
// 128×128 tile share a multiprocessor.)
template <> struct WRaw<T_Q6_K + MMHQ_WIDE> {
  static constexpr int stride = 104, pieces = 14;
  static __device__ __forceinline__ void copy(uint8_t *dst, const uint8_t *src, bool valid, int s, int u, const MmhqParams &) {
    const int q = s & 3, n = q >> 1, p = q & 1;
    const uint8_t *blk = src + 224 * (s >> 2);
    if (u < 12) {
      const int off = u < 8 ? 64 * n + 8 * u : 128 + 32 * n + 8 * (u - 8);
      mmhq_cp8(dst + 8 * u, valid ? blk + off : src, valid);
    } else {
      const int off = u == 12 ? 192 + 8 * n + 4 * p : 208;
      mmhq_cp4(dst + 96 + 4 * (u - 12), valid ? blk + off : src, valid ? 4 : 0);
    }
  }
  static __device__ __forceinline__ void deq8(const uint8_t *row, int s, int c, float v[8]) {
    q6_deq8<true>(row, row + 64, row + 96, h2f(ld16(row + 100)), s, c, v);
  }
};

// Q6_K as stored: 210-byte blocks leave rows only 2-byte aligned. Every
// field a stage needs starts at a multiple of 4 in the block, so all have
// the block's misalignment o = (address of the block) % 4, 0 or 2. Each
// field (a section: ql 64 bytes at 64n, qh 32 at 128 + 32n, the 4 scales at
// 192 + 8n + 4p, d 2 at 208) is copied as the words that cover it from its
// start less o, the bytes of a word past the section not read (they may lie
// past the matrix; those before it, when o is 2, lie within it: w is
// 16-byte aligned). Sections at 0 (17 words), 68 (9), 104 (2) and 112 (1);
// o in byte 116 (a plain store: the buffer is not read before the barrier
// that follows the copies' wait).
template <> struct WRaw<T_Q6_K> {
  static constexpr int stride = 120, pieces = 29, obyte = 116;
  static __device__ __forceinline__ void section(int u, int s, int &off, int &len, int &at, int &w) {
    const int q = s & 3, n = q >> 1, p = q & 1;
    if (u < 17) {
      off = 64 * n, len = 64, at = 0, w = u;
    } else if (u < 26) {
      off = 128 + 32 * n, len = 32, at = 68, w = u - 17;
    } else if (u < 28) {
      off = 192 + 8 * n + 4 * p, len = 4, at = 104, w = u - 26;
    } else {
      off = 208, len = 2, at = 112, w = 0;
    }
  }
  static __device__ __forceinline__ void copy(uint8_t *dst, const uint8_t *src, bool valid, int s, int u, const MmhqParams &p) {
    int off, len, at, w;
    section(u, s, off, len, at, w);
    int o = 0, n = 0;
    const uint8_t *word = p.w; // a 4-byte aligned address to name when nothing is read
    if (valid) {
      const uint8_t *f = src + 210 * (s >> 2) + off;
      o = (int)((uintptr_t)f & 3);
      n = min(4, max(0, o + len - 4 * w));
      if (n > 0) word = f - o + 4 * w;
    }
    mmhq_cp4(dst + at + 4 * w, word, n);
    if (u == 0) dst[obyte] = (uint8_t)o;
  }
  static __device__ __forceinline__ void deq8(const uint8_t *row, int s, int c, float v[8]) {
    const int o = row[obyte];
    q6_deq8<false>(row + o, row + 68 + o, row + 104 + o, h2f(ld16(row + 112 + o)), s, c, v);
  }
};

// mmhq_layout writes sizeof(MmhqParams) and the offset of each field, in
// declaration order, to out[0..16], MMHQ_BK and MMHQ_PAD to out[17..18], then
// WRaw<K>::stride for Q4_0, Q8_0, wide Q8_0, Q4_K, Q6_K, wide Q6_K, Q5_K
// (the order of mmhqKinds in mmhq_tile.go) to out[19..25], for the layout
// test.
extern "C" __global__ void mmhq_layout(int *out) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  out[0] = sizeof(MmhqParams);
  out[1] = offsetof(MmhqParams, w);
  out[2] = offsetof(MmhqParams, x);
  out[3] = offsetof(MmhqParams, y);
  out[4] = offsetof(MmhqParams, row_bytes);
  out[5] = offsetof(MmhqParams, rows);
  out[6] = offsetof(MmhqParams, cols);
  out[7] = offsetof(MmhqParams, batch);
  out[8] = offsetof(MmhqParams, accumulate);
  out[9] = offsetof(MmhqParams, nseg);
  out[10] = offsetof(MmhqParams, pad);
  MMA16_SEG_LAYOUT(out, 11, MmhqParams);
  out[17] = MMHQ_BK;
  out[18] = MMHQ_PAD;
  out[19] = WRaw<T_Q4_0>::stride;
  out[20] = WRaw<T_Q8_0>::stride;
  out[21] = WRaw<T_Q8_0 + MMHQ_WIDE>::stride;
  out[22] = WRaw<T_Q4_K>::stride;
  out[23] = WRaw<T_Q6_K>::stride;
  out[24] = WRaw<T_Q6_K + MMHQ_WIDE>::stride;
  out[25] = WRaw<T_Q5_K>::stride;
}

// mmhq is the product for weights of layout K in BM × BN tiles of Y, one
// warp per WM × WN sub-tile; grid (ceil(batch/BN), the segments'
// ceil(rows/BM) summed, mma16_segment): the
// blocks of one W tile are neighbours in launch order, so that a weight
// row is read from memory about once while the activations stay in L2;
// 32·(BM/WM)·(BN/WN) threads. Dynamic shared memory (mmhqShared in
// mmhq_tile.go): STAGES stages of [BN rows of X, LDS values each][BM raw W
// rows of WRaw<K>::stride bytes], then Wh, BM rows of LDS values.
template <int K, int BM, int BN, int WM, int WN, int STAGES> static __device__ void mmhq(const MmhqParams &p) {
  using W = WRaw<K>;
  constexpr int BK = MMHQ_BK, LDS = BK + MMHQ_PAD; // shared row stride of X and Wh in 16-bit values
  constexpr int THREADS = 32 * (BM / WM) * (BN / WN);
  constexpr int MT = WM / 16, NT = WN / 8; // m16 and n8 tiles per warp
  constexpr int XBYTES = BN * LDS * 2, RAW = BM * W::stride;
  constexpr int STAGE = XBYTES + RAW; // bytes of one stage
  constexpr int CHUNKS = BK / 8;      // 16-byte chunks of a staged X row; 8-value chunks of a Wh row
  static_assert(WM % 16 == 0 && WN % 16 == 0 && BM % WM == 0 && BN % WN == 0, "tile shapes");
  static_assert(STAGES >= 2 && STAGE % 16 == 0 && W::stride % 4 == 0, "staging: every stage and Wh 16-byte aligned");
  static_assert(BN * CHUNKS % THREADS == 0 && BM * CHUNKS % THREADS == 0, "whole chunks per thread");
  extern __shared__ __align__(128) uint8_t mmhq_shared[];
  uint16_t *wh = (uint16_t *)(mmhq_shared + STAGES * STAGE);
  const Mma16Seg<uint8_t> sg = mma16_segment<BM, uint8_t>(p, blockIdx.y);
  const int bm = sg.bm, bn = blockIdx.x * BN;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int wr = (warp % (BM / WM)) * WM, wc = (warp / (BM / WM)) * WN;
  const int stages = p.cols / BK;

  // This thread's X copies: chunk tid % CHUNKS of tile rows tid / CHUNKS +
  // j·THREADS/CHUNKS (rows past the batch zero-filled).
  constexpr int XJ = BN * CHUNKS / THREADS;
  const int c8 = 8 * (tid % CHUNKS);
  const uint16_t *xsrc[XJ];
  bool xok[XJ];
#pragma unroll
  for (int j = 0; j < XJ; j++) {
    const int r = bn + tid / CHUNKS + j * (THREADS / CHUNKS);
    xok[j] = r < p.batch;
    xsrc[j] = xok[j] ? p.x + (size_t)r * p.cols + c8 : p.x;
  }
  // issue queues the copies of stage s into its buffer.
  auto issue = [&](int s) {
    uint8_t *st = mmhq_shared + (s % STAGES) * STAGE;
    uint16_t *sx = (uint16_t *)st;
#pragma unroll
    for (int j = 0; j < XJ; j++) {
      const int i = tid / CHUNKS + j * (THREADS / CHUNKS);
      mma16_cp16(sx + i * LDS + c8, xok[j] ? xsrc[j] + s * BK : xsrc[j], xok[j]);
    }
    uint8_t *sw = st + XBYTES;
    for (int idx = tid; idx < BM * W::pieces; idx += THREADS) {
      const int i = idx / W::pieces, u = idx % W::pieces, r = bm + i;
      const bool ok = r < sg.rows;
      W::copy(sw + i * W::stride, ok ? sg.w + (size_t)r * p.row_bytes : sg.w, ok, s, u, p);
    }
  };

  float acc[MT][NT][4];
  mma16_zero(acc);

  // The first STAGES-1 stages; a group is committed for each, empty past
  // the last stage, so that the wait counts below hold throughout.
#pragma unroll
  for (int s = 0; s < STAGES - 1; s++) {
    if (s < stages) issue(s);
    mma16_commit();
  }
  // Lane offsets of the ldmatrix addresses: A is Wh's rows, B X's.
  const int a_off = mma16_a_off(lane, LDS), b_off = mma16_b_off(lane, LDS);
  for (int s = 0; s < stages; s++) {
    mma16_wait<STAGES - 2>(); // stage s has landed (this thread's copies)
    __syncthreads();          // everyone's copies; stage s-1 and Wh are consumed
    if (s + STAGES - 1 < stages) issue(s + STAGES - 1); // into the buffer of stage s-1
    mma16_commit();
    const uint8_t *st = mmhq_shared + (s % STAGES) * STAGE;
    const uint8_t *raw = st + XBYTES;
    // Dequantize: 8-value chunk tid % CHUNKS of Wh rows tid / CHUNKS +
    // j·THREADS/CHUNKS.
#pragma unroll
    for (int j = 0; j < BM * CHUNKS / THREADS; j++) {
      const int i = tid / CHUNKS + j * (THREADS / CHUNKS), c = tid % CHUNKS;
      float v[8];
      W::deq8(raw + i * W::stride, s, c, v);
      *(uint4 *)(wh + i * LDS + 8 * c) = pack8(v);
    }
    __syncthreads(); // Wh is whole
    const uint16_t *sx = (const uint16_t *)st;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      uint32_t a[MT][4], b[NT][2];
#pragma unroll
      for (int mi = 0; mi < MT; mi++) mma16_ldmatrix_x4(a[mi], wh + (wr + 16 * mi) * LDS + kk + a_off);
#pragma unroll
      for (int nj = 0; nj < NT / 2; nj++) mma16_ldmatrix_b2(b[2 * nj], b[2 * nj + 1], sx + (wc + 16 * nj) * LDS + kk + b_off);
#pragma unroll
      for (int mi = 0; mi < MT; mi++)
#pragma unroll
        for (int ni = 0; ni < NT; ni++) Mma16<MMA16_F16>::run(acc[mi][ni], a[mi], b[ni]);
    }
  }
  mma16_wait<0>(); // no copies outstanding at exit (the trailing groups are empty)

  mma_store(mma16_segment_y(p, sg.s), sg.rows, p.batch, p.accumulate, bm + wr, bn + wc, lane, acc);
}

// The kernels: mmhq_<kind>_<BM>x<BN>_<WM>x<WN>_k64s<STAGES> (mmhqTiles in
// mmhq_tile.go), each held to the registers that let MINB blocks share a
// multiprocessor.
#define MMHQ_KERNEL(name, K, BM, BN, WM, WN, STAGES, MINB)                                                \
  extern "C" __global__ void __launch_bounds__(32 * (BM / WM) * (BN / WN), MINB) name(const MmhqParams p) { \
    mmhq<K, BM, BN, WM, WN, STAGES>(p);                                                                   \
  }
#define MMHQ_KERNELS(name, K)                                  \
  MMHQ_KERNEL(name##_128x128_64x32_k64s3, K, 128, 128, 64, 32, 3, 2) \
  MMHQ_KERNEL(name##_128x64_64x32_k64s3, K, 128, 64, 64, 32, 3, 3)   \
  MMHQ_KERNEL(name##_64x64_32x32_k64s3, K, 64, 64, 32, 32, 3, 4)
MMHQ_KERNELS(mmhq_q4_0, T_Q4_0)
MMHQ_KERNELS(mmhq_q8_0, T_Q8_0)
MMHQ_KERNELS(mmhq_q8_0_wide, T_Q8_0 + MMHQ_WIDE)
MMHQ_KERNELS(mmhq_q4_k, T_Q4_K)
MMHQ_KERNELS(mmhq_q6_k, T_Q6_K)
MMHQ_KERNELS(mmhq_q6_k_wide, T_Q6_K + MMHQ_WIDE)
MMHQ_KERNELS(mmhq_q5_k, T_Q5_K)
