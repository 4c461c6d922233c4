// attention_prefill.cu: causal attention of a prompt's rows over the KV
// cache on the tensor cores, flash-attention-2 style, for steps of many
// rows of one sequence (a prompt chunk) beside single decode rows.
//
// The batch is described by a tile table (PrefillTile): tile i covers
// `rows` consecutive batch rows from row0, all of sequence seq, at
// positions pos0, pos0+1, ... Their K and V are already in the cache (the
// RoPE/cache-write launch runs first), so row b attends to positions
// 0..pos(b) of its sequence, like attention_part + attention_merge.
//
// One block per (tile, KV head, chunk of PF_M query rows). A query row is a
// pair (batch row r of the tile, query head g of the KV head's group),
// numbered m = r·G + g, so the G heads that share a KV head share every K/V
// tile a block stages, and one decode row (G query rows) still fills part
// of an m16 fragment. Four warps take 16 query rows each. The positions
// 0..(the block's last position) are walked in tiles of BN: each tile's K
// and V rows are read from the cache (f32 today), converted to f16 and
// stored to shared memory, double-buffered: tile j+1's K is loaded before
// tile j's S = Q·Kᵀ and stored after it, its V likewise around P·V (one
// set of loads in registers at a time). Per tile and warp,
// S = Q·Kᵀ (16 × BN, f32) and O += P·V (16 × D, f32) run on
// mma.sync.m16n8k16 with f16 operands: Q's fragments stay in registers
// (D ≤ 128) or are read from shared memory (D = 256); P is rounded from S's
// accumulators in place (their fragment layout is the A layout of the next
// product). The softmax is online, in f32, with the logit scale folded
// into exp2; the causal mask is applied only to the tiles that cross a
// row's position. The output is normalized and written as f32. A row's
// result does not depend on the rows beside it (see the softmax).
//
// The architectures' scores (gemma2, phi3): a logit scale other than
// 1/√headDim is scaleLog2's; soft-capped logits (capOut > 0) become
// capOut·tanh(s·capIn) right after S = Q·Kᵀ (capIn = scale/cap, capOut =
// cap·log2 e, and then scaleLog2 = 1, so the softmax below multiplies by
// exactly 1 and llama's path keeps its bits); a window > 0 hides the
// positions p ≤ pos - window of a row at pos, as attention_part does: a
// block starts its walk at the tile of its first row's first visible
// position, a warp skips the tiles none of its rows sees, and the mask
// covers the tiles that cross a window's start.
//
// Head sizes: the kernels are compiled for D = 64, 128 and 256; a head of
// any multiple of 16 up to 256 runs in the smallest D that holds it, its
// missing dimensions zero (loaded as zeros, never written).
#include <cuda_fp16.h>
#include <stdint.h>

#include "kv.cuh"
#include "overlap.cuh"

#define PF_THREADS 128 // four warps
#define PF_M 64        // query rows per block: 16 per warp

// KVElem<T> reads a cache of element type T: a Chunk holds 8 consecutive
// values as loaded, load reads one (16-byte aligned), zero is the chunk of
// a position or dimension past the walk, and half converts a chunk to 8
// f16 values (one 16-byte store). An f16 cache is KVElem<__half>, whose
// chunk is already f16.
template <typename T> struct KVElem;

template <> struct KVElem<float> {
  struct Chunk {
    float4 a, b;
  };
  static __device__ __forceinline__ Chunk load(const float *p) {
    return {*(const float4 *)p, *(const float4 *)(p + 4)};
  }
  static __device__ __forceinline__ Chunk zero() {
    return {make_float4(0.f, 0.f, 0.f, 0.f), make_float4(0.f, 0.f, 0.f, 0.f)};
  }
  static __device__ __forceinline__ uint4 half(const Chunk &c) {
    return make_uint4(pack(c.a.x, c.a.y), pack(c.a.z, c.a.w), pack(c.b.x, c.b.y), pack(c.b.z, c.b.w));
  }
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
    const __half2 h = __floats2half2_rn(lo, hi);
    return *(const uint32_t *)&h;
  }
};

template <> struct KVElem<__half> {
  struct Chunk {
    uint4 a;
  };
  static __device__ __forceinline__ Chunk load(const __half *p) { return {*(const uint4 *)p}; }
  static __device__ __forceinline__ Chunk zero() { return {make_uint4(0, 0, 0, 0)}; }
  static __device__ __forceinline__ uint4 half(const Chunk &c) { return c.a; }
};

// The cache is addressed only through kv.cuh: an addressing A (KVFlat for
// the per-slot f32 cache, KVPaged for the paged pool) names the cell of a
// position, whose row of kvdim values (every KV head) is kv_at's.

// pack2 rounds two f32 values to one f16x2 register, lo in the low half
// (the smaller column of a fragment).
static __device__ __forceinline__ uint32_t pack2(float lo, float hi) { return KVElem<float>::pack(lo, hi); }

// ldsm4 / ldsm4t load four 8×8 f16 matrices from shared memory (ldmatrix;
// lanes 8i..8i+7 give the row addresses of matrix i, 16-byte aligned):
// register i holds matrix i's (row lane/4, columns 2(lane%4), +1), or with
// t the transpose's (rows 2(lane%4), +1 of column lane/4).
static __device__ __forceinline__ void ldsm4(uint32_t r[4], const __half *p) {
  const unsigned a = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}
static __device__ __forceinline__ void ldsm4t(uint32_t r[4], const __half *p) {
  const unsigned a = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}

// mma16816 is c += a·b for a 16×16 f16 tile a (row-major fragments: with
// g = lane/4 and t = lane%4, a[0] = (g, 2t..2t+1), a[1] = (g+8, 2t..),
// a[2] = (g, 2t+8..), a[3] = (g+8, 2t+8..)) and a 16×8 tile b (b[0] =
// rows 2t..2t+1 of column g, b[1] = rows 2t+8..2t+9), f32 accumulators
// c = (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1).
static __device__ __forceinline__ void mma16816(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

// PrefillCfg<D, BN> is the shape of a kernel for heads of up to D values
// walking BN positions per tile: shared-memory rows of PITCH f16 values (D
// plus 8, so the 8 rows an ldmatrix reads fall in distinct banks), and
// STAGE chunks of 8 values per thread per K (or V) tile.
template <int D, int BN> struct PrefillCfg {
  static constexpr int PITCH = D + 8;
  static constexpr int CH = D / 8;                    // chunks per row
  static constexpr int STAGE = BN * CH / PF_THREADS;  // chunks per thread per matrix tile
  static constexpr int TILE = BN * PITCH;             // f16 values of one matrix tile
  static constexpr int QTILE = PF_M * PITCH;          // f16 values of the block's queries
  static_assert(D % 16 == 0 && BN % 16 == 0, "whole fragments");
  static_assert(BN * CH % PF_THREADS == 0, "every thread stages the same number of chunks");
};

// attention_prefill<T, A, D, BN, QREG>: grid (chunks, tiles, kvHeads) with
// chunks = ceil(maxRows·G / PF_M), PF_THREADS threads, prefill shared
// memory of (4·BN + (QREG ? 0 : PF_M))·(D+8)·2 bytes: two stages of K and
// V tiles, and the queries (with QREG they sit in the second stage until
// they are in registers, so their region must fit there: PF_M ≤ 2·BN).
// A tile whose fields are out of range (rows outside 1..maxRows or past
// the batch, a sequence outside the cache, positions outside the context)
// is skipped: its rows are left as they were. A position whose cell is -1
// (a block id outside a paged pool) reads as zeros.
template <typename T, typename A, int D, int BN, bool QREG>
static __device__ __forceinline__ void attention_prefill(const float *__restrict__ q, float *__restrict__ out,
                                                         const T *__restrict__ kc, const T *__restrict__ vc,
                                                         const int *__restrict__ tiles, int batch, int heads,
                                                         int kvHeads, int headDim, const A addr,
                                                         int maxRows, float scaleLog2, float capIn,
                                                         float capOut, int window) {
  using C = PrefillCfg<D, BN>;
  using E = KVElem<T>;
  static_assert(!QREG || PF_M <= 2 * BN, "the queries are staged in the second K/V stage");
  extern __shared__ __align__(16) __half pf_smem[];
  // Stage b: its K tile at 2b·TILE, its V tile after it (computed, not
  // indexed from an array, so that no pointer table goes to local memory).
  auto kbuf = [&](int b) { return pf_smem + 2 * b * C::TILE; };
  auto vbuf = [&](int b) { return pf_smem + (2 * b + 1) * C::TILE; };
  __half *qs = QREG ? pf_smem + 2 * C::TILE : pf_smem + 4 * C::TILE;

  // Later chunks and tiles walk more positions: they start first.
  const int chunk = gridDim.x - 1 - blockIdx.x, ti = gridDim.y - 1 - blockIdx.y, kvh = blockIdx.z;
  grid_wait(); // nothing is read before: the tile table may come from a kernel too
  const int row0 = tiles[4 * ti], rows = tiles[4 * ti + 1], seq = tiles[4 * ti + 2], pos0 = tiles[4 * ti + 3];
  const int G = heads / kvHeads, kvdim = kvHeads * headDim;
  const int m0 = chunk * PF_M, mrows = rows * G;
  if (rows < 1 || rows > maxRows || row0 < 0 || row0 > batch - rows || !addr.covers(seq, pos0, rows) || m0 >= mrows)
    return;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int last = pos0 + (min(m0 + PF_M, mrows) - 1) / G; // the block's last position
  const int ntiles = last / BN + 1;
  // The first tile a row of the block sees: its first row's window start.
  const int j0 = window > 0 ? max(0, pos0 + m0 / G - window + 1) / BN : 0;
  // This warp's query rows m0 + 16·warp + (0..15): the positions of its
  // first and last valid row, and of the thread's rows g and g+8.
  const int wm = m0 + 16 * warp;
  const int wfirst = pos0 + min(wm, mrows - 1) / G, wlast = pos0 + min(wm + 15, mrows - 1) / G;
  const int rpos[2] = {pos0 + (wm + g) / G, pos0 + (wm + g + 8) / G};

  // load(x, j) loads this thread's chunks of tile j of cache x (K or V)
  // into kv; put(buf) writes them, as f16, to a stage's tile buf.
  // Positions past the block's last and dimensions past the head are zeros.
  typename E::Chunk kv[C::STAGE];
  auto load = [&](const T *x, int j) {
#pragma unroll
    for (int i = 0; i < C::STAGE; i++) {
      const int c = tid + i * PF_THREADS, r = c / C::CH, e = (c % C::CH) * 8, p = j * BN + r;
      const long long cell = p <= last && e < headDim ? addr.cell(seq, p) : -1;
      kv[i] = cell >= 0 ? E::load(kv_at(x, cell, kvdim) + (size_t)kvh * headDim + e) : E::zero();
    }
  };
  auto put = [&](__half *buf) {
#pragma unroll
    for (int i = 0; i < C::STAGE; i++) {
      const int c = tid + i * PF_THREADS, r = c / C::CH, e = (c % C::CH) * 8;
      *(uint4 *)(buf + r * C::PITCH + e) = E::half(kv[i]);
    }
  };

  load(kc, j0);
  put(kbuf(0));
  load(vc, j0);
  // The queries: query row i of the block is head kvh·G + (m0+i)%G of
  // batch row row0 + (m0+i)/G; rows past the tile are zeros.
  for (int c = tid; c < PF_M * C::CH; c += PF_THREADS) {
    const int i = c / C::CH, e = (c % C::CH) * 8, m = m0 + i;
    uint4 h = make_uint4(0, 0, 0, 0);
    if (m < mrows && e < headDim) {
      const float *src = q + ((size_t)(row0 + m / G) * heads + (size_t)kvh * G + m % G) * headDim + e;
      h = KVElem<float>::half(KVElem<float>::load(src));
    }
    *(uint4 *)(qs + i * C::PITCH + e) = h;
  }
  put(vbuf(0));
  __syncthreads();
  // ldmatrix addresses: lane l gives row l%8 of matrix l/8.
  const int lr = lane & 7, lm = lane >> 3;
  uint32_t qf[QREG ? D / 16 : 1][4];
  if constexpr (QREG) {
#pragma unroll
    for (int kc = 0; kc < D / 16; kc++)
      ldsm4(qf[kc], qs + (16 * warp + (lm & 1) * 8 + lr) * C::PITCH + kc * 16 + (lm >> 1) * 8);
    __syncthreads(); // the queries' region is the second stage
  }

  float o[D / 8][4];
#pragma unroll
  for (int d = 0; d < D / 8; d++) o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.f;
  float mx[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};

  for (int j = j0; j < ntiles; j++) {
    const int b = (j - j0) & 1;
    const bool next = j + 1 < ntiles;
    // Tile j+1 goes to stage b^1, which no warp reads before the barrier
    // that ends this tile: K is loaded before S = Q·Kᵀ and stored after,
    // V loaded before P·V and stored after, so that each set of loads has
    // a product to hide behind and only one is held in registers.
    if (next) load(kc, j + 1);
    const int p0 = j * BN;
    // A warp whose rows are all past the tile's, or all before this tile's
    // positions, or whose windows all start after it, skips it.
    if (wm < mrows && p0 <= wlast && (window == 0 || p0 + BN - 1 > wfirst - window)) {
      const __half *ks = kbuf(b), *vs = vbuf(b);
      float s[BN / 8][4];
#pragma unroll
      for (int n = 0; n < BN / 8; n++) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
#pragma unroll
      for (int kc = 0; kc < D / 16; kc++) {
        uint32_t a[4];
        if constexpr (QREG) {
          a[0] = qf[kc][0], a[1] = qf[kc][1], a[2] = qf[kc][2], a[3] = qf[kc][3];
        } else {
          ldsm4(a, qs + (16 * warp + (lm & 1) * 8 + lr) * C::PITCH + kc * 16 + (lm >> 1) * 8);
        }
#pragma unroll
        for (int n = 0; n < BN / 8; n += 2) {
          // Matrices: positions 8n.. at dimensions 16kc and 16kc+8, then
          // positions 8(n+1).. likewise: b0, b1 of n-tiles n and n+1.
          uint32_t kb[4];
          ldsm4(kb, ks + (8 * n + (lm >> 1) * 8 + lr) * C::PITCH + kc * 16 + (lm & 1) * 8);
          mma16816(s[n], a, kb[0], kb[1]);
          mma16816(s[n + 1], a, kb[2], kb[3]);
        }
      }
      if (next) put(kbuf(b ^ 1)), load(vc, j + 1);
      // The soft-cap, in units of exp2 (scaleLog2 is then 1).
      if (capOut > 0.f) {
#pragma unroll
        for (int n = 0; n < BN / 8; n++) {
#pragma unroll
          for (int e = 0; e < 4; e++) s[n][e] = capOut * tanhf(s[n][e] * capIn);
        }
      }
      // The causal mask, where the tile reaches past the warp's first row,
      // and the window's, where it starts before the warp's last row's
      // window.
      if (p0 + BN - 1 > wfirst || (window > 0 && p0 <= wlast - window)) {
#pragma unroll
        for (int n = 0; n < BN / 8; n++) {
#pragma unroll
          for (int e = 0; e < 4; e++) {
            const int p = p0 + 8 * n + 2 * t + (e & 1), rp = rpos[e >> 1];
            if (p > rp || (window > 0 && p <= rp - window)) s[n][e] = -INFINITY;
          }
        }
      }
      // Online softmax on rows g (r = 0) and g+8 (r = 1); the four lanes
      // of a quad hold a row's columns. l stays a per-lane partial sum.
#pragma unroll
      for (int r = 0; r < 2; r++) {
        float m = -INFINITY;
#pragma unroll
        for (int n = 0; n < BN / 8; n++) m = fmaxf(m, fmaxf(s[n][2 * r], s[n][2 * r + 1]));
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
        // mx is kept scaled (in units of exp2), so that a tile that does
        // not raise a row's max scales it by exactly 1 (exp2f(0)), however
        // the compiler contracts the products: a row's result is then the
        // same whatever tiles past its position its block walks, so it
        // does not depend on the batch around it.
        const float mNew = fmaxf(mx[r], m * scaleLog2);
        const float base = mNew == -INFINITY ? 0.f : mNew;
        const float corr = exp2f(mx[r] - base); // 0 on the first tile
        float sum = 0.f;
#pragma unroll
        for (int n = 0; n < BN / 8; n++) {
          s[n][2 * r] = exp2f(s[n][2 * r] * scaleLog2 - base);
          s[n][2 * r + 1] = exp2f(s[n][2 * r + 1] * scaleLog2 - base);
          sum += s[n][2 * r] + s[n][2 * r + 1];
        }
        l[r] = l[r] * corr + sum;
        mx[r] = mNew;
#pragma unroll
        for (int d = 0; d < D / 8; d++) o[d][2 * r] *= corr, o[d][2 * r + 1] *= corr;
      }
      // O += P·V: P's k-chunk kk is S's n-tiles 2kk and 2kk+1.
#pragma unroll
      for (int kk = 0; kk < BN / 16; kk++) {
        const uint32_t a[4] = {pack2(s[2 * kk][0], s[2 * kk][1]), pack2(s[2 * kk][2], s[2 * kk][3]),
                               pack2(s[2 * kk + 1][0], s[2 * kk + 1][1]), pack2(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
        for (int d = 0; d < D / 8; d += 2) {
          // Matrices (transposed): positions 16kk.. and 16kk+8.. at
          // dimensions 8d.., then at 8(d+1)..: b0, b1 of n-tiles d, d+1.
          uint32_t vb[4];
          ldsm4t(vb, vs + (16 * kk + (lm & 1) * 8 + lr) * C::PITCH + 8 * d + (lm >> 1) * 8);
          mma16816(o[d], a, vb[0], vb[1]);
          mma16816(o[d + 1], a, vb[2], vb[3]);
        }
      }
    } else if (next) {
      put(kbuf(b ^ 1)), load(vc, j + 1);
    }
    if (next) put(vbuf(b ^ 1));
    __syncthreads();
  }

  // Normalize and write rows g and g+8 of the warp, dimensions below headDim.
#pragma unroll
  for (int r = 0; r < 2; r++) {
    float sum = l[r];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const int m = wm + g + 8 * r;
    if (m >= mrows) continue;
    const float inv = 1.f / sum;
    float *dst = out + ((size_t)(row0 + m / G) * heads + (size_t)kvh * G + m % G) * headDim;
#pragma unroll
    for (int d = 0; d < D / 8; d++) {
      const int e = 8 * d + 2 * t;
      if (e < headDim) *(float2 *)(dst + e) = make_float2(o[d][2 * r] * inv, o[d][2 * r + 1] * inv);
    }
  }
  grid_launch();
}

// The compiled kernels, f32 cache: D = 64 walks 64 positions per tile,
// 128 walks 32 and 256 walks 16 (each thread then stages 4 chunks of K and
// 4 of V per tile, 64 registers of f32); D = 256 reads Q's fragments from
// shared memory, its O accumulators alone taking 128 registers. Each comes
// twice: NAME with llama's scores (no cap, no window: the terms are
// constants, so its code has none of their tests) and NAME_arch with the
// architectures' (capIn, capOut, window).
#define PF_FLAT_PARAMS(T)                                                                                      \
  const float *__restrict__ q, float *__restrict__ out, const T *__restrict__ kc, const T *__restrict__ vc,   \
      const int *__restrict__ tiles, int batch, int heads, int kvHeads, int headDim, int ctx, int maxSeqs,     \
      int maxRows, float scaleLog2
#define ATTENTION_PREFILL(NAME, T, D, BN, QREG, MINB)                                                          \
  extern "C" __global__ void __launch_bounds__(PF_THREADS, MINB) NAME(PF_FLAT_PARAMS(T)) {                    \
    attention_prefill<T, KVFlat, D, BN, QREG>(q, out, kc, vc, tiles, batch, heads, kvHeads, headDim,           \
                                              KVFlat{ctx, maxSeqs}, maxRows, scaleLog2, 0.f, 0.f, 0);         \
  }                                                                                                            \
  extern "C" __global__ void __launch_bounds__(PF_THREADS, MINB)                                               \
      NAME##_arch(PF_FLAT_PARAMS(T), float capIn, float capOut, int window) {                                  \
    attention_prefill<T, KVFlat, D, BN, QREG>(q, out, kc, vc, tiles, batch, heads, kvHeads, headDim,           \
                                              KVFlat{ctx, maxSeqs}, maxRows, scaleLog2, capIn, capOut, window); \
  }

// The paged f16 pool's kernels (kv.cuh): the same walk, the pool's
// parameters in place of ctx and maxSeqs.
#define PF_PAGED_PARAMS                                                                                        \
  const float *__restrict__ q, float *__restrict__ out, const __half *__restrict__ kc,                        \
      const __half *__restrict__ vc, const int *__restrict__ tiles, int batch, int heads, int kvHeads,         \
      int headDim, const int *__restrict__ tables, int tableCols, int blockSize, int blocks, int maxSeqs,      \
      int maxRows, float scaleLog2
#define PF_POOL KVPaged{kv_pool(tables, tableCols, blockSize, blocks, maxSeqs)}
#define ATTENTION_PREFILL_PAGED(NAME, D, BN, QREG, MINB)                                                       \
  extern "C" __global__ void __launch_bounds__(PF_THREADS, MINB) NAME(PF_PAGED_PARAMS) {                      \
    attention_prefill<__half, KVPaged, D, BN, QREG>(q, out, kc, vc, tiles, batch, heads, kvHeads, headDim,     \
                                                    PF_POOL, maxRows, scaleLog2, 0.f, 0.f, 0);                 \
  }                                                                                                            \
  extern "C" __global__ void __launch_bounds__(PF_THREADS, MINB)                                               \
      NAME##_arch(PF_PAGED_PARAMS, float capIn, float capOut, int window) {                                    \
    attention_prefill<__half, KVPaged, D, BN, QREG>(q, out, kc, vc, tiles, batch, heads, kvHeads, headDim,     \
                                                    PF_POOL, maxRows, scaleLog2, capIn, capOut, window);       \
  }

#define PF_BN_64 64
#define PF_BN_128 32
#define PF_BN_256 16
ATTENTION_PREFILL(attention_prefill_f32_64, float, 64, PF_BN_64, true, 2)
ATTENTION_PREFILL(attention_prefill_f32_128, float, 128, PF_BN_128, true, 2)
ATTENTION_PREFILL(attention_prefill_f32_256, float, 256, PF_BN_256, false, 1)
ATTENTION_PREFILL_PAGED(attention_prefill_pf16_64, 64, PF_BN_64, true, 2)
ATTENTION_PREFILL_PAGED(attention_prefill_pf16_128, 128, PF_BN_128, true, 2)
ATTENTION_PREFILL_PAGED(attention_prefill_pf16_256, 256, PF_BN_256, false, 1)

// prefill_shared is the extent, in bytes, of the shared memory the
// kernel for D indexes: four K/V tiles, and the queries' region (at the
// second stage with QREG, else after the stages).
template <int D, int BN, bool QREG> static __device__ constexpr int prefill_shared() {
  using C = PrefillCfg<D, BN>;
  return 2 * (QREG ? max(4 * C::TILE, 2 * C::TILE + C::QTILE) : 4 * C::TILE + C::QTILE);
}

// attention_prefill_layout writes, for D = 64, 128 and 256, the positions
// per tile and the shared memory of its kernel to out[2i], out[2i+1], then
// PF_M, for the test that checks the Go side sizes launches alike.
extern "C" __global__ void attention_prefill_layout(int *out) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  out[0] = PF_BN_64, out[1] = prefill_shared<64, PF_BN_64, true>();
  out[2] = PF_BN_128, out[3] = prefill_shared<128, PF_BN_128, true>();
  out[4] = PF_BN_256, out[5] = prefill_shared<256, PF_BN_256, false>();
  out[6] = PF_M;
}
