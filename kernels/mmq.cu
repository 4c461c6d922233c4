// mmq.cu: matrix-matrix products Y[B×rows] = X[B×cols] · Wᵀ on the tensor
// cores, for quantized W (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K,
// Q5_K and Q6_K as stored, Q6_K and Q8_0 in the wide layout of
// kernels/wide.go), with int8 mma.sync (m16n8k32 and m16n8k16, sm_80 and
// newer).
//
// Two launches:
//   - mmq_quantize rounds X to 8 bits in blocks of 32 values (d =
//     max|v|/127, q = round-to-even(v·127/max|v|), as the mvq products do)
//     into a scratch buffer: B rows of kpad int8 values (kpad = cols rounded
//     up to a whole stage of MMQ_KB blocks, the tail zero), then B rows of
//     kpad/32 (d, d·Σq) f32 pairs (the sum serves the mins of Q4_K and
//     Q5_K);
//   - mmq_<type>_<BM>x<BN> multiplies: a block computes a BM × BN tile of
//     Y (BM weight rows by BN batch columns; 64×64, 64×128 and 128×128 are
//     compiled) with one warp per 32 × 32 sub-tile; the k axis runs in stages of MMQ_KB blocks of 32 values
//     whose W and X tiles are copied to shared memory with cp.async, two
//     stages in flight (double buffering). One m16n8k32 product is exactly
//     one 32-value block (all of whose weights share a scale and a min in
//     the 32-value block types, Q4_K and Q5_K), so its int32 result is
//     scaled by d_w·d_x and added to f32 accumulators, less m_w·d_x·Σq_x
//     for the types with mins.
//     Q2_K, Q3_K and Q6_K have a scale (and Q2_K a min) per 16 values:
//     each block is two m16n8k16 products (the halves of the m16n8k32
//     fragments), each scaled by its own d_w; Q2_K's mins take the sums of
//     the 16-value halves of X's block, which one m16n8k32 product of X
//     with a constant 0/1 tile yields (compute_stage16).
//     The epilogue writes Y, or adds to it (accumulate: the residual
//     connection).
//
// The parameters travel as one struct by value, MmqParams, whose layout the
// Go side (mmqParams in mmq_cuda.go) mirrors; mmq_layout writes its offsets
// for the test that checks both agree.
#include <stdint.h>
#include <stddef.h>
#include <cuda_fp16.h>

#define MMQ_KB 4 // 32-value blocks per stage

// Type codes, as gguf.Type (and T_WIDE in mvq.cu for the wide layout).
#define MMQ_T_Q4_0 2
#define MMQ_T_Q4_1 3
#define MMQ_T_Q5_0 6
#define MMQ_T_Q5_1 7
#define MMQ_T_Q8_0 8
#define MMQ_T_Q2_K 10
#define MMQ_T_Q3_K 11
#define MMQ_T_Q4_K 12
#define MMQ_T_Q5_K 13
#define MMQ_T_Q6_K 14
#define MMQ_T_WIDE 256

// MmqParams is one product. Pointers are device addresses; w must be
// 16-byte aligned, cols a multiple of 64 (of 256 for the K-quants);
// row_bytes is a multiple of 4 but for Q3_K and Q6_K as stored (110 and
// 210-byte blocks), whose rows are only 2-byte aligned.
struct MmqParams {
  const uint8_t *w;  // rows × row_bytes: the weights, in their storage layout
  const int8_t *xq;  // batch × kpad: X rounded to 8 bits (mmq_quantize)
  const float2 *xd;  // batch × kpad/32: (d, d·Σq) of xq's blocks
  float *y;          // batch × rows: the result
  long long row_bytes; // stored size of one weight row
  int rows;          // rows of W (columns of Y)
  int cols;          // columns of W and X
  int batch;         // rows of X and Y
  int kpad;          // cols rounded up to a multiple of 32·MMQ_KB
  int accumulate;    // 1: y += X·Wᵀ; 0: y = X·Wᵀ
  int type;          // MMQ_T_* (documentation and checks; each kernel reads one)
  int split_stages;  // k stages per part of a split product (blockIdx.z picks the part; 0: one part)
  int pad;           // unused: the struct fills whole 8-byte parameter slots
};

static_assert(sizeof(MmqParams) == 72, "MmqParams is 72 bytes (mmqParams in mmq_cuda.go)");
static_assert(offsetof(MmqParams, split_stages) == 64, "MmqParams.split_stages at 64");
static_assert(offsetof(MmqParams, row_bytes) == 32, "MmqParams.row_bytes at 32");
static_assert(offsetof(MmqParams, type) == 60, "MmqParams.type at 60");

// mmq_quantize rounds x (batch × cols f32) to 8-bit blocks of 32: xq
// (batch × kpad int8) and xd (batch × kpad/32 (d, d·Σq)), zero past cols.
// One warp per block; grid (ceil(kpad/32/8), batch), 256 threads.
extern "C" __global__ void mmq_quantize(const float *__restrict__ x, int8_t *__restrict__ xq,
                                        float2 *__restrict__ xd, int cols, int kpad, int batch) {
  const int lane = threadIdx.x & 31;
  const int blk = blockIdx.x * 8 + (threadIdx.x >> 5);
  const int b = blockIdx.y;
  if (b >= batch || blk * 32 >= kpad) return;
  const int k = blk * 32 + lane;
  const float v = k < cols ? x[(size_t)b * cols + k] : 0.0f;
  float amax = fabsf(v);
  for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  const float d = amax / 127.0f;
  const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
  const int q = __float2int_rn(v * id);
  xq[(size_t)b * kpad + k] = (int8_t)q;
  int sum = q;
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (lane == 0) xd[(size_t)b * (kpad / 32) + blk] = make_float2(d, d * (float)sum);
}

// Shared-memory row strides, in bytes, of one stage: the X tile (MMQ_KB·32
// values plus 16 bytes of padding, so that the eight rows a fragment load
// touches fall in distinct banks) and the W tile per storage layout
// (WLayout::stride, chosen likewise).
#define MMQ_XSTRIDE (MMQ_KB * 32 + 16)

// WLayout<T> is how a stage of W rows of layout T sits in shared memory:
// stride bytes per row, chunks cp.async copies of chunk bytes per row
// (load), and frag, which reads the 8-bit values of one 32-value block j
// of the stage for fragment column t: the 32-bit words of values 4t..4t+3
// (lo) and 16+4t..16+4t+3 (hi), the block's scale dw and, for types with
// a min (has_min), the min mw that the block's values are offset by (w =
// dw·q − mw). h is the stage's parity (which half of a 256-value
// super-block it holds). The layouts with 16-value scales (sub16) have
// frag16 instead, whose dw and mw are float2: those of values 0..15 (x)
// and 16..31 (y) of the block.
template <int T> struct WLayout;

// ld32u reads a 32-bit word from a 2-byte aligned shared address.
static __device__ __forceinline__ int ld32u(const uint8_t *p) {
  const uint16_t *h = (const uint16_t *)p;
  return (int)((uint32_t)h[0] | ((uint32_t)h[1] << 16));
}

// scale_min_k4 unpacks the 6-bit scale and min of group j (0..7) from the
// 12 packed scale bytes of a Q4_K or Q5_K block (gguf.ScaleMinK4).
static __device__ __forceinline__ void scale_min_k4(int j, const uint8_t *q, int &sc, int &m) {
  if (j < 4) {
    sc = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// Q4_0 as stored: 18-byte blocks (f16 d, 16 bytes of nibbles: value l low,
// value l+16 high), copied raw in 4-byte words.
template <> struct WLayout<MMQ_T_Q4_0> {
  static constexpr int block = 18;
  static constexpr int stride = 80; // 72 bytes of blocks, padded
  static constexpr bool has_min = false, sub16 = false;
  static __device__ __forceinline__ void frag(const uint8_t *row, int j, int t, int, int &lo, int &hi, float &dw, float &mw) {
    const uint8_t *blk = row + j * 18;
    const int q = ld32u(blk + 2 + 4 * t);
    lo = __vsub4(q & 0x0F0F0F0F, 0x08080808);
    hi = __vsub4((q >> 4) & 0x0F0F0F0F, 0x08080808);
    dw = __half2float(*(const __half *)blk);
    mw = 0.0f;
  }
};

// Q8_0 as stored: 34-byte blocks (f16 d, 32 int8), copied raw in 4-byte
// words.
template <> struct WLayout<MMQ_T_Q8_0> {
  static constexpr int block = 34;
  static constexpr int stride = 144; // 136 bytes of blocks, padded
  static constexpr bool has_min = false, sub16 = false;
  static __device__ __forceinline__ void frag(const uint8_t *row, int j, int t, int, int &lo, int &hi, float &dw, float &mw) {
    const uint8_t *blk = row + j * 34;
    lo = ld32u(blk + 2 + 4 * t);
    hi = ld32u(blk + 18 + 4 * t);
    dw = __half2float(*(const __half *)blk);
    mw = 0.0f;
  }
};

// Q8_0 wide: a row's int8 values, then its f16 scales. A stage row: the
// MMQ_KB·32 values (8 chunks of 16 bytes), then the MMQ_KB scales (one
// chunk of 8 bytes).
template <> struct WLayout<MMQ_T_Q8_0 + MMQ_T_WIDE> {
  static constexpr int stride = 144;
  static constexpr bool has_min = false, sub16 = false;
  static __device__ __forceinline__ void frag(const uint8_t *row, int j, int t, int, int &lo, int &hi, float &dw, float &mw) {
    const int *q = (const int *)(row + j * 32);
    lo = q[t];
    hi = q[t + 4];
    dw = __half2float(((const __half *)(row + MMQ_KB * 32))[j]);
    mw = 0.0f;
  }
};

// Q4_K: 144-byte super-blocks of 256 values (d, dmin, scales[12] in the
// first 16 bytes, qs[128]: 32 bytes per 64 values, group 2c low nibbles,
// 2c+1 high). A stage is half a super-block: its 16-byte head and the 64
// bytes of qs of its four groups.
template <> struct WLayout<MMQ_T_Q4_K> {
  static constexpr int stride = 80;
  static constexpr bool has_min = true, sub16 = false;
  static __device__ __forceinline__ void frag(const uint8_t *row, int j, int t, int h, int &lo, int &hi, float &dw, float &mw) {
    const uint8_t *qs = row + 16 + 32 * (j >> 1);
    const int sh = 4 * (j & 1);
    lo = (*(const int *)(qs + 4 * t) >> sh) & 0x0F0F0F0F;
    hi = (*(const int *)(qs + 16 + 4 * t) >> sh) & 0x0F0F0F0F;
    int sc, m;
    scale_min_k4(4 * h + j, row + 4, sc, m);
    dw = __half2float(*(const __half *)row) * (float)sc;
    mw = __half2float(*(const __half *)(row + 2)) * (float)m;
  }
};

// Q5_K: 176-byte super-blocks (d, dmin, scales[12], qh[32]: bit g of byte
// l is the fifth bit of value l of group g, qs[128] as Q4_K). A stage: the
// 16-byte head, all of qh, and the 64 bytes of qs of its four groups.
template <> struct WLayout<MMQ_T_Q5_K> {
  static constexpr int stride = 112;
  static constexpr bool has_min = true, sub16 = false;
  static __device__ __forceinline__ void frag(const uint8_t *row, int j, int t, int h, int &lo, int &hi, float &dw, float &mw) {
    const uint8_t *qs = row + 48 + 32 * (j >> 1);
    const int sh = 4 * (j & 1), g = 4 * h + j;
    const int *qh = (const int *)(row + 16);
    lo = ((*(const int *)(qs + 4 * t) >> sh) & 0x0F0F0F0F) | (((qh[t] >> g) & 0x01010101) << 4);
    hi = ((*(const int *)(qs + 16 + 4 * t) >> sh) & 0x0F0F0F0F) | (((qh[t + 4] >> g) & 0x01010101) << 4);
    int sc, m;
    scale_min_k4(g, row + 4, sc, m);
    dw = __half2float(*(const __half *)row) * (float)sc;
    mw = __half2float(*(const __half *)(row + 2)) * (float)m;
  }
};

#include "mma_store.cuh"
#include "mmq_types.cuh"

// mmq_layout writes sizeof(MmqParams) and the offset of each field, in
// declaration order up to split_stages, to out[0..12], then the
// shared-memory strides the Go side sizes the stages with (WLayout<T>::stride
// in the order of mmqKinds in mmq_cuda.go: Q4_0, Q8_0, wide Q8_0, Q4_K,
// Q5_K, wide Q6_K, Q6_K, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K; then MMQ_XSTRIDE) to
// out[13..25], for the layout test.
extern "C" __global__ void mmq_layout(int *out) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  out[0] = sizeof(MmqParams);
  out[1] = offsetof(MmqParams, w);
  out[2] = offsetof(MmqParams, xq);
  out[3] = offsetof(MmqParams, xd);
  out[4] = offsetof(MmqParams, y);
  out[5] = offsetof(MmqParams, row_bytes);
  out[6] = offsetof(MmqParams, rows);
  out[7] = offsetof(MmqParams, cols);
  out[8] = offsetof(MmqParams, batch);
  out[9] = offsetof(MmqParams, kpad);
  out[10] = offsetof(MmqParams, accumulate);
  out[11] = offsetof(MmqParams, type);
  out[12] = offsetof(MmqParams, split_stages);
  out[13] = WLayout<MMQ_T_Q4_0>::stride;
  out[14] = WLayout<MMQ_T_Q8_0>::stride;
  out[15] = WLayout<MMQ_T_Q8_0 + MMQ_T_WIDE>::stride;
  out[16] = WLayout<MMQ_T_Q4_K>::stride;
  out[17] = WLayout<MMQ_T_Q5_K>::stride;
  out[18] = WLayout<MMQ_T_Q6_K + MMQ_T_WIDE>::stride;
  out[19] = WLayout<MMQ_T_Q6_K>::stride;
  out[20] = WLayout<MMQ_T_Q4_1>::stride;
  out[21] = WLayout<MMQ_T_Q5_0>::stride;
  out[22] = WLayout<MMQ_T_Q5_1>::stride;
  out[23] = WLayout<MMQ_T_Q2_K>::stride;
  out[24] = WLayout<MMQ_T_Q3_K>::stride;
  out[25] = MMQ_XSTRIDE;
}

// Stage is one k stage of both tiles in shared memory (dynamic; the Go
// side's mmqShared is 2·sizeof(Stage)).
template <int T, int BM, int BN> struct Stage {
  uint8_t w[BM * WLayout<T>::stride]; // BM weight rows of the stage's blocks
  int8_t x[BN * MMQ_XSTRIDE];         // BN batch rows of 8-bit values
  float2 xd[BN * MMQ_KB];             // their (scale, scale·Σq), MMQ_KB per row
};

// MmqScale is the type of a converted block's scale and min: float for
// the 32-value scale layouts, float2 (values 0..15, 16..31) for sub16.
template <bool SUB16> struct MmqScale { using type = float; };
template <> struct MmqScale<true> { using type = float2; };

// Conv is a stage of W rows converted once per block (convert_stage) into
// the uniform layout every warp reads in the _cv kernels: BM rows of
// MMQ_KB·32 int8 values at the X tile's stride (word t of block j: values
// 4t..4t+3, as frag's lo; word t+4 its hi), and each block's dw and mw as
// frag (frag16) gives them. It follows the two stages in dynamic shared
// memory.
template <int T, int BM> struct Conv {
  using S = typename MmqScale<WLayout<T>::sub16>::type;
  int8_t q[BM * MMQ_XSTRIDE]; // BM rows of the stage's 8-bit values
  S d[BM * MMQ_KB];           // dw of row i's block j at i·MMQ_KB + j
  S m[BM * MMQ_KB];           // mw likewise (zero for the layouts without mins)
};

static __device__ __forceinline__ uint32_t smem_addr(const void *p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}

// cp_async copies n (4, 8 or 16) bytes from global src to shared dst, or
// zero-fills them when valid is false (src is then not read).
template <int N> static __device__ __forceinline__ void cp_async(void *dst, const void *src, bool valid) {
  const int size = valid ? N : 0;
  if constexpr (N == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(size));
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(smem_addr(dst)), "l"(src), "n"(N), "r"(size));
  }
}
static __device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// cp_async4n copies the first n (0..4) bytes of the 4-byte aligned word at
// global src to shared dst and zero-fills the rest of the word (src is not
// read when n is 0).
static __device__ __forceinline__ void cp_async4n(void *dst, const void *src, int n) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(n));
}
template <int N> static __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// load_w queues the copies of stage s of the W rows from bm into dst; rows
// past W's are zero-filled, and so are blocks past its columns (raw
// layouts; the others have whole super-blocks).
template <int T, int BM, int THREADS>
static __device__ __forceinline__ void load_w(const MmqParams &p, uint8_t *dst, int s, int bm) {
  const int tid = threadIdx.x;
  const int kb0 = s * MMQ_KB;
  constexpr int S = WLayout<T>::stride;
  if constexpr (T == MMQ_T_Q4_0 || T == MMQ_T_Q8_0 || T == MMQ_T_Q4_1 || T == MMQ_T_Q5_0 || T == MMQ_T_Q5_1) {
    // The stage's blocks as raw bytes, in 4-byte words.
    constexpr int words = MMQ_KB * WLayout<T>::block / 4;
    const int valid = (min(MMQ_KB, p.cols / 32 - kb0) * WLayout<T>::block) / 4;
    for (int idx = tid; idx < BM * words; idx += THREADS) {
      const int i = idx / words, u = idx % words, r = bm + i;
      const bool ok = r < p.rows && u < valid;
      const uint8_t *src = ok ? p.w + (size_t)r * p.row_bytes + (size_t)kb0 * WLayout<T>::block + 4 * u : p.w;
      cp_async<4>(dst + i * S + 4 * u, src, ok);
    }
  } else if constexpr (T == MMQ_T_Q8_0 + MMQ_T_WIDE) {
    // Eight 16-byte chunks of values and one 8-byte chunk of scales per row.
    for (int idx = tid; idx < BM * 9; idx += THREADS) {
      const int i = idx / 9, c = idx % 9, r = bm + i;
      const uint8_t *row = p.w + (size_t)r * p.row_bytes;
      const bool ok = r < p.rows;
      if (c < 8) {
        cp_async<16>(dst + i * S + 16 * c, ok ? row + kb0 * 32 + 16 * c : p.w, ok);
      } else {
        cp_async<8>(dst + i * S + MMQ_KB * 32, ok ? row + p.cols + 2 * kb0 : p.w, ok);
      }
    }
  } else if constexpr (T == MMQ_T_Q6_K + MMQ_T_WIDE) {
    // The half's ql (four 16-byte chunks) and qh (two), the scales, d.
    const int sb = s >> 1, half = s & 1;
    for (int idx = tid; idx < BM * 8; idx += THREADS) {
      const int i = idx >> 3, c = idx & 7, r = bm + i;
      const uint8_t *blk = p.w + (size_t)r * p.row_bytes + (size_t)sb * 224;
      const int off = c < 4 ? 64 * half + 16 * c : c < 6 ? 128 + 32 * half + 16 * (c - 4) : 192 + 16 * (c - 6);
      const bool ok = r < p.rows;
      cp_async<16>(dst + i * S + 16 * c, ok ? blk + off : p.w, ok);
    }
  } else if constexpr (T == MMQ_T_Q2_K) {
    // The half's 8 scale bytes (2 words), its 32 bytes of qs (8), d and
    // dmin (1): all at 4-byte multiples of the 84-byte block.
    const int sb = s >> 1, half = s & 1;
    for (int idx = tid; idx < BM * 11; idx += THREADS) {
      const int i = idx / 11, u = idx % 11, r = bm + i;
      const uint8_t *blk = p.w + (size_t)r * p.row_bytes + (size_t)sb * 84;
      const int off = u < 2 ? 8 * half + 4 * u : u < 10 ? 16 + 32 * half + 4 * (u - 2) : 80;
      const bool ok = r < p.rows;
      cp_async<4>(dst + i * S + 4 * u, ok ? blk + off : p.w, ok);
    }
  } else if constexpr (T == MMQ_T_Q3_K || T == MMQ_T_Q6_K) {
    // 2-byte aligned blocks: each section (WLayout::section) as the words
    // that cover it from its start rounded down to 4 bytes, and that
    // offset o in byte obyte of the row (a plain store: the buffer is not
    // read until the __syncthreads that follows the copies' wait). A
    // word's bytes past the section are not read (they may lie past the
    // matrix); those before it, when o is 2, lie in the matrix (w is
    // 16-byte aligned).
    using L = WLayout<T>;
    const int sb = s >> 1, half = s & 1;
    for (int idx = tid; idx < BM * L::words; idx += THREADS) {
      const int i = idx / L::words, u = idx % L::words, r = bm + i;
      int off, len, at, w;
      L::section(u, half, off, len, at, w);
      uint8_t *row = dst + i * S;
      int o = 0, n = 0;
      const uint8_t *word = p.w;
      if (r < p.rows) {
        const uint8_t *src = p.w + (size_t)r * p.row_bytes + (size_t)sb * L::bytes + off;
        o = (int)((uintptr_t)src & 3);
        n = min(4, max(0, o + len - 4 * w));
        if (n > 0) word = src - o + 4 * w;
      }
      cp_async4n(row + at + 4 * w, word, n);
      if (u == 0) row[L::obyte] = (uint8_t)o;
    }
  } else {
    // K-quants: the super-block's 16-byte head (and Q5_K's 32 bytes of
    // high bits), then the stage's 64 bytes of nibbles.
    constexpr int bytes = T == MMQ_T_Q4_K ? 144 : 176;
    constexpr int head = T == MMQ_T_Q4_K ? 1 : 3; // 16-byte chunks before qs
    const int sb = s >> 1, half = s & 1;
    for (int idx = tid; idx < BM * (head + 4); idx += THREADS) {
      const int i = idx / (head + 4), c = idx % (head + 4), r = bm + i;
      const uint8_t *blk = p.w + (size_t)r * p.row_bytes + (size_t)sb * bytes;
      const int off = c < head ? 16 * c : 16 * head + 64 * half + 16 * (c - head);
      const bool ok = r < p.rows;
      cp_async<16>(dst + i * S + 16 * c, ok ? blk + off : p.w, ok);
    }
  }
}

// load_stage queues the copies of stage s (blocks s·MMQ_KB ...) of the W
// rows from bm and the X rows from bn into st; X rows past the batch are
// zero-filled.
template <int T, int BM, int BN, int THREADS>
static __device__ __forceinline__ void load_stage(const MmqParams &p, Stage<T, BM, BN> &st, int s, int bm, int bn) {
  load_w<T, BM, THREADS>(p, st.w, s, bm);
  const int kb0 = s * MMQ_KB;
  // Eight 16-byte chunks of values and two of scales per batch row.
  for (int idx = threadIdx.x; idx < BN * 10; idx += THREADS) {
    const int i = idx / 10, c = idx % 10, b = bn + i;
    const bool ok = b < p.batch;
    if (c < 8) {
      const int8_t *src = ok ? p.xq + (size_t)b * p.kpad + kb0 * 32 + 16 * c : p.xq;
      cp_async<16>(st.x + i * MMQ_XSTRIDE + 16 * c, src, ok);
    } else {
      const float2 *src = ok ? p.xd + (size_t)b * (p.kpad / 32) + kb0 + 2 * (c - 8) : p.xd;
      cp_async<16>(st.xd + i * MMQ_KB + 2 * (c - 8), src, ok);
    }
  }
}

// wl_frag reads block j of a raw stage row for fragment column t as the
// layout gives it: WLayout::frag, or frag16 for the layouts with 16-value
// scales (sub16), whose dw and mw are float2 (MmqScale).
template <int T>
static __device__ __forceinline__ void wl_frag(const uint8_t *row, int j, int t, int h, int &lo, int &hi,
                                               typename MmqScale<WLayout<T>::sub16>::type &dw,
                                               typename MmqScale<WLayout<T>::sub16>::type &mw) {
  if constexpr (WLayout<T>::sub16) {
    WLayout<T>::frag16(row, j, t, h, lo, hi, dw, mw);
  } else {
    WLayout<T>::frag(row, j, t, h, lo, hi, dw, mw);
  }
}

// wfrag reads block j of row r of a stage of W for fragment column t (as
// wl_frag): from the raw stage, or (CV) from its converted tile.
template <int T, int BM, int BN, bool CV>
static __device__ __forceinline__ void wfrag(const Stage<T, BM, BN> &st, const Conv<T, BM> *cv, int r, int j, int t, int h,
                                             int &lo, int &hi, typename Conv<T, BM>::S &dw, typename Conv<T, BM>::S &mw) {
  if constexpr (CV) {
    const int *q = (const int *)(cv->q + r * MMQ_XSTRIDE + j * 32);
    lo = q[t];
    hi = q[t + 4];
    dw = cv->d[r * MMQ_KB + j];
    mw = cv->m[r * MMQ_KB + j];
  } else {
    wl_frag<T>(st.w + r * WLayout<T>::stride, j, t, h, lo, hi, dw, mw);
  }
}

// convert_stage decodes the raw W rows of st (stage parity h) once into
// cv, all threads sharing the work: one (row, block, fragment column) per
// step, t fastest, so that a warp's stores fall in distinct banks.
template <int T, int BM, int BN, int THREADS>
static __device__ __forceinline__ void convert_stage(const Stage<T, BM, BN> &st, int h, Conv<T, BM> &cv) {
  using L = WLayout<T>;
  for (int idx = threadIdx.x; idx < BM * MMQ_KB * 4; idx += THREADS) {
    const int t = idx & 3, j = (idx >> 2) % MMQ_KB, i = idx / (4 * MMQ_KB);
    int lo, hi;
    typename Conv<T, BM>::S dw, mw;
    wl_frag<T>(st.w + i * L::stride, j, t, h, lo, hi, dw, mw);
    int *q = (int *)(cv.q + i * MMQ_XSTRIDE + j * 32);
    q[t] = lo;
    q[t + 4] = hi;
    if (t == 0) {
      cv.d[i * MMQ_KB + j] = dw;
      cv.m[i * MMQ_KB + j] = mw;
    }
  }
}

// mma_s8 is c = a·b for a 16×32 int8 tile a (row-major fragments) and a
// 32×8 int8 tile b (column-major), int32 results.
static __device__ __forceinline__ void mma_s8(int c[4], const int a[4], const int b[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"
      : "=r"(c[0]), "=r"(c[1]), "=r"(c[2]), "=r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(0), "r"(0), "r"(0), "r"(0));
#endif
}

// i2f converts an int32 of magnitude below 2^22 (a block's dot product:
// at most 32·128·127) to float exactly, with an integer and a float add:
// the bits of 1.5·2^23 + c read as a float are that number exactly, since
// floats in [2^23, 2^24) are the integers. Cheaper than I2F, which runs at
// a quarter of the float rate and would bound the products.
static __device__ __forceinline__ float i2f(int c) {
  return __int_as_float(0x4B400000 + c) - 12582912.0f;
}

// compute_stage adds the stage's products to the warp's 32 × 32 tile acc
// (two 16-row tiles by four 8-column tiles, four values each); h is the
// stage's parity. Fragment layouts of m16n8k32 (PTX ISA): with g = lane/4
// and t = lane%4, A's registers are rows g, g+8, g, g+8 at words t, t,
// t+4, t+4; B's are column g at words t and t+4; C's are (g, 2t),
// (g, 2t+1), (g+8, 2t), (g+8, 2t+1).
template <int T, int BM, int BN, int MI, int NI, bool CV>
static __device__ __forceinline__ void compute_stage(const Stage<T, BM, BN> &st, const Conv<T, BM> *cv, int h, int wr, int wc,
                                                     float acc[MI][NI][4]) {
  using L = WLayout<T>;
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int j = 0; j < MMQ_KB; j++) {
    int a[MI][4];
    float dw[MI][2], mw[MI][2];
#pragma unroll
    for (int mi = 0; mi < MI; mi++) {
      const int r = wr + mi * 16 + g;
      wfrag<T, BM, BN, CV>(st, cv, r, j, t, h, a[mi][0], a[mi][2], dw[mi][0], mw[mi][0]);
      wfrag<T, BM, BN, CV>(st, cv, r + 8, j, t, h, a[mi][1], a[mi][3], dw[mi][1], mw[mi][1]);
    }
#pragma unroll
    for (int ni = 0; ni < NI; ni++) {
      const int *xr = (const int *)(st.x + (wc + ni * 8 + g) * MMQ_XSTRIDE + j * 32);
      const int b[2] = {xr[t], xr[t + 4]};
      const int c0 = wc + ni * 8 + 2 * t;
      const float2 x0 = st.xd[c0 * MMQ_KB + j], x1 = st.xd[(c0 + 1) * MMQ_KB + j];
#pragma unroll
      for (int mi = 0; mi < MI; mi++) {
        int c[4];
        mma_s8(c, a[mi], b);
        acc[mi][ni][0] += i2f(c[0]) * (dw[mi][0] * x0.x);
        acc[mi][ni][1] += i2f(c[1]) * (dw[mi][0] * x1.x);
        acc[mi][ni][2] += i2f(c[2]) * (dw[mi][1] * x0.x);
        acc[mi][ni][3] += i2f(c[3]) * (dw[mi][1] * x1.x);
        if constexpr (L::has_min) {
          acc[mi][ni][0] -= mw[mi][0] * x0.y;
          acc[mi][ni][1] -= mw[mi][0] * x1.y;
          acc[mi][ni][2] -= mw[mi][1] * x0.y;
          acc[mi][ni][3] -= mw[mi][1] * x1.y;
        }
      }
    }
  }
}

// mma_s8_k16 is c = a·b for a 16×16 int8 tile a (rows g, g+8 at word t:
// the first or second half of an m16n8k32 A fragment) and a 16×8 tile b
// (column g at word t), int32 results laid out as mma_s8's.
static __device__ __forceinline__ void mma_s8_k16(int c[4], int a0, int a1, int b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};\n"
      : "=r"(c[0]), "=r"(c[1]), "=r"(c[2]), "=r"(c[3])
      : "r"(a0), "r"(a1), "r"(b), "r"(0), "r"(0), "r"(0), "r"(0));
#endif
}

// compute_stage16 is compute_stage for the layouts with a scale per 16
// values (WLayout::sub16): each block's product is two m16n8k16 products,
// values 0..15 (A words t, B word t) and 16..31 (A words t+4, B word t+4),
// each scaled by its half's d_w before the block's d_x. For a layout with
// mins, one m16n8k32 product of the X block with the constant A tile whose
// rows 0..7 are ones at k 0..15 and rows 8..15 ones at k 16..31 gives the
// sums of the block's halves per column: (g, 2t), (g, 2t+1) the first
// half's of columns 2t, 2t+1, (g+8, ·) the second's.
template <int T, int BM, int BN, int MI, int NI, bool CV>
static __device__ __forceinline__ void compute_stage16(const Stage<T, BM, BN> &st, const Conv<T, BM> *cv, int h, int wr, int wc,
                                                       float acc[MI][NI][4]) {
  using L = WLayout<T>;
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int j = 0; j < MMQ_KB; j++) {
    int a[MI][4];
    float2 dw[MI][2], mw[MI][2];
#pragma unroll
    for (int mi = 0; mi < MI; mi++) {
      const int r = wr + mi * 16 + g;
      wfrag<T, BM, BN, CV>(st, cv, r, j, t, h, a[mi][0], a[mi][2], dw[mi][0], mw[mi][0]);
      wfrag<T, BM, BN, CV>(st, cv, r + 8, j, t, h, a[mi][1], a[mi][3], dw[mi][1], mw[mi][1]);
    }
#pragma unroll
    for (int ni = 0; ni < NI; ni++) {
      const int *xr = (const int *)(st.x + (wc + ni * 8 + g) * MMQ_XSTRIDE + j * 32);
      const int b[2] = {xr[t], xr[t + 4]};
      const int c0 = wc + ni * 8 + 2 * t;
      const float xs[2] = {st.xd[c0 * MMQ_KB + j].x, st.xd[(c0 + 1) * MMQ_KB + j].x};
      float hs[4] = {}; // Σq of the halves: first of 2t, 2t+1, second of 2t, 2t+1
      if constexpr (L::has_min) {
        const int ones[4] = {0x01010101, 0, 0, 0x01010101};
        int c[4];
        mma_s8(c, ones, b);
#pragma unroll
        for (int e = 0; e < 4; e++) hs[e] = i2f(c[e]);
      }
#pragma unroll
      for (int mi = 0; mi < MI; mi++) {
        int cl[4], ch[4];
        mma_s8_k16(cl, a[mi][0], a[mi][1], b[0]);
        mma_s8_k16(ch, a[mi][2], a[mi][3], b[1]);
        // Rounding steps spelled out (no contraction left to the
        // compiler), so every tile and batch sums the same way.
#pragma unroll
        for (int e = 0; e < 4; e++) {
          const float2 d = dw[mi][e >> 1];
          float v = __fmaf_rn(i2f(ch[e]), d.y, __fmul_rn(i2f(cl[e]), d.x));
          if constexpr (L::has_min) {
            const float2 m = mw[mi][e >> 1];
            v = __fsub_rn(v, __fmaf_rn(m.y, hs[2 + (e & 1)], __fmul_rn(m.x, hs[e & 1])));
          }
          acc[mi][ni][e] = __fmaf_rn(v, xs[e & 1], acc[mi][ni][e]);
        }
      }
    }
  }
}

// mmq is the product for weights of layout T in BM × BN tiles of Y, one
// warp per WM × WN sub-tile (the warps along the rows first); CV: each
// stage of W is converted once (convert_stage) and the warps read the
// converted tile. Grid (ceil(rows/BM), ceil(batch/BN), parts): a split
// product (split_stages > 0) computes in block z the stages z·split_stages
// up to the next part's and writes its partial sums to y + z·batch·rows
// (mmq_reduce adds the parts); 32·(BM/WM)·(BN/WN) threads;
// 2·sizeof(Stage<T, BM, BN>) (+ sizeof(Conv<T, BM>) with CV) bytes of
// dynamic shared memory.
template <int T, int BM, int BN, int WM, int WN, bool CV> static __device__ void mmq(const MmqParams &p) {
  constexpr int MI = WM / 16, NI = WN / 8;
  constexpr int THREADS = 32 * (BM / WM) * (BN / WN);
  extern __shared__ __align__(16) uint8_t mmq_shared[];
  Stage<T, BM, BN> *st = (Stage<T, BM, BN> *)mmq_shared;
  Conv<T, BM> *cv = CV ? (Conv<T, BM> *)(mmq_shared + 2 * sizeof(Stage<T, BM, BN>)) : nullptr;
  const int bm = blockIdx.x * BM, bn = blockIdx.y * BN;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int wr = (warp % (BM / WM)) * WM, wc = (warp / (BM / WM)) * WN;
  float acc[MI][NI][4] = {};
  const int stages = p.kpad / (32 * MMQ_KB);
  const int per = p.split_stages > 0 ? p.split_stages : stages;
  const int s0 = blockIdx.z * per, s1 = min(stages, s0 + per);
  if (s0 < s1) {
    load_stage<T, BM, BN, THREADS>(p, st[0], s0, bm, bn);
    cp_async_commit();
  }
  for (int s = s0; s < s1; s++) {
    Stage<T, BM, BN> &cur = st[(s - s0) & 1];
    if (s + 1 < s1) {
      load_stage<T, BM, BN, THREADS>(p, st[(s + 1 - s0) & 1], s + 1, bm, bn);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    if constexpr (CV) {
      convert_stage<T, BM, BN, THREADS>(cur, s & 1, *cv);
      __syncthreads();
    }
    if constexpr (WLayout<T>::sub16) {
      compute_stage16<T, BM, BN, MI, NI, CV>(cur, cv, s & 1, wr, wc, acc);
    } else {
      compute_stage<T, BM, BN, MI, NI, CV>(cur, cv, s & 1, wr, wc, acc);
    }
    __syncthreads(); // cur (and cv) are refilled next
  }
  mma_store(p.y + (size_t)blockIdx.z * p.batch * p.rows, p.rows, p.batch, p.accumulate, bm + wr, bn + wc, lane, acc);
}

// mmq_reduce adds the parts of a split product in part order (so the sum
// does not depend on which block finished first): y[i] = Σ_z part[z·n + i]
// (y[i] + that sum with accumulate) for i < n = batch·rows. Grid
// ceil(n/256), 256 threads.
extern "C" __global__ void mmq_reduce(const float *__restrict__ part, float *__restrict__ y, long long n, int parts,
                                      int accumulate) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float sum = part[i];
  for (int z = 1; z < parts; z++) sum = __fadd_rn(sum, part[(size_t)z * n + i]);
  y[i] = accumulate ? __fadd_rn(y[i], sum) : sum;
}

// The kernels: mmq_<type>_<BM>x<BN>[_w64][_cv], warps of WM × WN, at
// least MB blocks a multiprocessor (MB·(BM/WM)·(BN/WN) warps: 16, so 128
// registers a thread, but for the 64 × 32 warps: 12 warps for 128×64, 8
// for 128×128, which hold 64 accumulators a thread and spill hundreds of
// bytes within 128 registers). The baseline tiles (64×64, 64×128,
// 128×128, warps of 32 × 32) read the raw stages; the narrow batch tiles
// (64×16, 128×16 with warps of 32 × 16; 64×32, 128×32) have one warp per
// 32 rows; _cv are the baseline tiles on converted stages, and _w64_cv
// 128×64 and 128×128 tiles of 64 × 32 warps on converted stages (twice
// the products per fragment load).
#define MMQ_KERNEL(name, T, BM, BN, WM, WN, CV, MB)                                        \
  extern "C" __global__ void __launch_bounds__(32 * (BM / WM) * (BN / WN), MB) name(const MmqParams p) { \
    mmq<T, BM, BN, WM, WN, CV>(p);                                                         \
  }
#define MMQ_KERNELS(name, T)                                    \
  MMQ_KERNEL(name##_64x64, T, 64, 64, 32, 32, false, 4)         \
  MMQ_KERNEL(name##_64x128, T, 64, 128, 32, 32, false, 2)       \
  MMQ_KERNEL(name##_128x128, T, 128, 128, 32, 32, false, 1)     \
  MMQ_KERNEL(name##_64x16, T, 64, 16, 32, 16, false, 8)         \
  MMQ_KERNEL(name##_128x16, T, 128, 16, 32, 16, false, 4)       \
  MMQ_KERNEL(name##_64x32, T, 64, 32, 32, 32, false, 8)         \
  MMQ_KERNEL(name##_128x32, T, 128, 32, 32, 32, false, 4)       \
  MMQ_KERNEL(name##_64x64_cv, T, 64, 64, 32, 32, true, 4)       \
  MMQ_KERNEL(name##_64x128_cv, T, 64, 128, 32, 32, true, 2)     \
  MMQ_KERNEL(name##_128x128_cv, T, 128, 128, 32, 32, true, 1)   \
  MMQ_KERNEL(name##_128x64_w64_cv, T, 128, 64, 64, 32, true, 3) \
  MMQ_KERNEL(name##_128x128_w64_cv, T, 128, 128, 64, 32, true, 1)
MMQ_KERNELS(mmq_q4_0, MMQ_T_Q4_0)
MMQ_KERNELS(mmq_q8_0, MMQ_T_Q8_0)
MMQ_KERNELS(mmq_q8_0_wide, MMQ_T_Q8_0 + MMQ_T_WIDE)
MMQ_KERNELS(mmq_q4_k, MMQ_T_Q4_K)
MMQ_KERNELS(mmq_q5_k, MMQ_T_Q5_K)
MMQ_KERNELS(mmq_q6_k_wide, MMQ_T_Q6_K + MMQ_T_WIDE)
MMQ_KERNELS(mmq_q6_k, MMQ_T_Q6_K)
MMQ_KERNELS(mmq_q4_1, MMQ_T_Q4_1)
MMQ_KERNELS(mmq_q5_0, MMQ_T_Q5_0)
MMQ_KERNELS(mmq_q5_1, MMQ_T_Q5_1)
MMQ_KERNELS(mmq_q2_k, MMQ_T_Q2_K)
MMQ_KERNELS(mmq_q3_k, MMQ_T_Q3_K)
