// mvq_dot.cuh: the 8-bit products of the matrix-vector kernels (mvq.cu,
// moe.cu): a weight row's 64-value groups of each common quantized type
// (Q4_0, Q8_0, Q4_K, Q5_K, Q6_K and the wide layouts), their integer dot
// products (dp4a) with an input staged in shared memory as 8-bit values,
// and the staging itself (layout: mvq.cu's top comment).
#pragma once
#include "fused.cuh"

// G64 is one 64-value group of a weight row: its values as signed bytes,
// the multiplier of each 16-value piece's integer dot product with the
// input (before the input's scale), and the coefficient of each 32-value
// half's input sum (the blocks' minimums).
struct G64 {
  int q[16];
  float c[4], m[2];
};

// words_a2 reads n 4-byte words from a 2-byte aligned address with aligned
// loads (one word more than n, so it may read up to 4 bytes past the end).
template <int N>
static __device__ __forceinline__ void words_a2(const uint8_t *p, uint32_t *out) {
  const uint32_t *base = (const uint32_t *)((uintptr_t)p & ~(uintptr_t)3);
  const int sh = ((uintptr_t)p & 3) * 8;
  uint32_t w[N + 1];
#pragma unroll
  for (int k = 0; k <= N; k++) w[k] = __ldg(base + k);
#pragma unroll
  for (int k = 0; k < N; k++) out[k] = __funnelshift_r(w[k], w[k + 1], sh);
}

template <int T> struct Group;

// Q8_0: blocks of {f16 d; int8 q[32]}; a group is two blocks, 68 bytes at
// a 4-byte aligned offset.
template <> struct Group<T_Q8_0> {
  static __device__ __forceinline__ void load(const uint8_t *row, int g, int cols, G64 &w) {
    const uint32_t *p = (const uint32_t *)(row + 68 * g);
    uint32_t v[17];
#pragma unroll
    for (int k = 0; k < 17; k++) v[k] = __ldg(p + k);
#pragma unroll
    for (int k = 0; k < 8; k++) {
      w.q[k] = (int)__funnelshift_r(v[k], v[k + 1], 16);
      w.q[8 + k] = (int)v[9 + k];
    }
    const float d0 = h2f(v[0] & 0xFFFF), d1 = h2f(v[8] >> 16);
    w.c[0] = w.c[1] = d0, w.c[2] = w.c[3] = d1;
    w.m[0] = w.m[1] = 0.f;
  }
};

// Q4_0: blocks of {f16 d; u8 q[16]} (value j: low nibble of q[j], value
// j+16: high nibble, both minus 8); a group is 36 bytes, 4-byte aligned.
template <> struct Group<T_Q4_0> {
  static __device__ __forceinline__ void load(const uint8_t *row, int g, int cols, G64 &w) {
    const uint32_t *p = (const uint32_t *)(row + 36 * g);
    uint32_t v[9];
#pragma unroll
    for (int k = 0; k < 9; k++) v[k] = __ldg(p + k);
#pragma unroll
    for (int k = 0; k < 4; k++) {
      const uint32_t a = __funnelshift_r(v[k], v[k + 1], 16), b = v[5 + k];
      w.q[k] = (int)__vsub4(a & 0x0F0F0F0Fu, 0x08080808u);
      w.q[4 + k] = (int)__vsub4((a >> 4) & 0x0F0F0F0Fu, 0x08080808u);
      w.q[8 + k] = (int)__vsub4(b & 0x0F0F0F0Fu, 0x08080808u);
      w.q[12 + k] = (int)__vsub4((b >> 4) & 0x0F0F0F0Fu, 0x08080808u);
    }
    const float d0 = h2f(v[0] & 0xFFFF), d1 = h2f(v[4] >> 16);
    w.c[0] = w.c[1] = d0, w.c[2] = w.c[3] = d1;
    w.m[0] = w.m[1] = 0.f;
  }
};

// k4_coefs sets the multipliers and minimum terms of group j (sub-blocks
// 2j and 2j+1) of a Q4_K or Q5_K block from its first 16 bytes h: d and
// dmin, then the 6-bit scales and minimums of the eight sub-blocks, packed
// (k4scale_hdr): bytes 4-7 and 8-11 hold those of sub-blocks 0-3 in their
// low 6 bits and the top 2 bits of those of sub-blocks 4-7, bytes 12-15
// the low 4 bits of the latter. All four of a kind are unpacked at once,
// with no branch on j. The multiplier of sub-block 2j+1 is also multiplied
// by hs (a power of two, so exactly).
static __device__ __forceinline__ void k4_coefs(uint4 h, int j, float hs, G64 &w) {
  const bool lo = j < 2;
  const uint32_t sc = lo ? h.y & 0x3F3F3F3Fu : (h.w & 0x0F0F0F0Fu) | ((h.y >> 2) & 0x30303030u);
  const uint32_t mn = lo ? h.z & 0x3F3F3F3Fu : ((h.w >> 4) & 0x0F0F0F0Fu) | ((h.z >> 2) & 0x30303030u);
  const int sh = 16 * (j & 1);
  const float d = h2f(h.x & 0xFFFF), dmin = h2f(h.x >> 16);
  w.c[0] = w.c[1] = d * (float)((sc >> sh) & 0xFF), w.c[2] = w.c[3] = d * (float)((sc >> (sh + 8)) & 0xFF) * hs;
  w.m[0] = dmin * (float)((mn >> sh) & 0xFF), w.m[1] = dmin * (float)((mn >> (sh + 8)) & 0xFF);
}

// Q4_K: 256-value blocks of {f16 d, dmin; u8 scales[12]; u8 qs[128]};
// group j of a block is qs[32j..32j+32): low nibbles are sub-block 2j,
// high nibbles sub-block 2j+1. Blocks are 144 bytes, 16-byte aligned.
template <> struct Group<T_Q4_K> {
  static __device__ __forceinline__ void load(const uint8_t *row, int g, int cols, G64 &w) {
    const uint8_t *p = row + 144 * (g >> 2);
    const int j = g & 3;
    const uint4 h = ld128(p), a = ld128(p + 16 + 32 * j), b = ld128(p + 32 + 32 * j);
    const uint32_t v[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
    for (int k = 0; k < 8; k++) {
      w.q[k] = (int)(v[k] & 0x0F0F0F0Fu);
      w.q[8 + k] = (int)(v[k] & 0xF0F0F0F0u); // 16 times the value (Dot)
    }
    k4_coefs(h, j, 0.0625f, w);
  }
};

// Q5_K: Q4_K with a fifth bit per value: {f16 d, dmin; u8 scales[12];
// u8 qh[32]; u8 qs[128]}; bit 2j of qh[l] belongs to value l of sub-block
// 2j, bit 2j+1 to value l of sub-block 2j+1. 176 bytes, 16-byte aligned.
template <> struct Group<T_Q5_K> {
  static __device__ __forceinline__ void load(const uint8_t *row, int g, int cols, G64 &w) {
    const uint8_t *p = row + 176 * (g >> 2);
    const int j = g & 3;
    const uint4 h = ld128(p), h0 = ld128(p + 16), h1 = ld128(p + 32);
    const uint4 a = ld128(p + 48 + 32 * j), b = ld128(p + 64 + 32 * j);
    const uint32_t v[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
    const uint32_t hb[8] = {h0.x, h0.y, h0.z, h0.w, h1.x, h1.y, h1.z, h1.w};
#pragma unroll
    for (int k = 0; k < 8; k++) {
      w.q[k] = (int)((v[k] & 0x0F0F0F0Fu) | (((hb[k] >> (2 * j)) & 0x01010101u) << 4));
      w.q[8 + k] = (int)(((v[k] >> 4) & 0x0F0F0F0Fu) | (((hb[k] >> (2 * j + 1)) & 0x01010101u) << 4));
    }
    k4_coefs(h, j, 1.f, w);
  }
};

// q6_group builds group j of a Q6_K block from its words: l0 and l1 the
// low bits of the group's two 32-value halves, hb their high bits, sc the
// four 16-value scales, d the block scale.
static __device__ __forceinline__ void q6_group(const uint32_t l0[8], const uint32_t l1[8], const uint32_t hb[8],
                                                uint32_t sc, float d, int sub, G64 &w) {
  const int s4 = 4 * sub;
#pragma unroll
  for (int k = 0; k < 8; k++) {
    const uint32_t a = ((l0[k] >> s4) & 0x0F0F0F0Fu) | (((hb[k] >> s4) & 0x03030303u) << 4);
    const uint32_t b = ((l1[k] >> s4) & 0x0F0F0F0Fu) | (((hb[k] >> (s4 + 2)) & 0x03030303u) << 4);
    w.q[k] = (int)__vsub4(a, 0x20202020u);
    w.q[8 + k] = (int)__vsub4(b, 0x20202020u);
  }
#pragma unroll
  for (int k = 0; k < 4; k++) w.c[k] = d * (float)(signed char)((sc >> (8 * k)) & 0xFF);
  w.m[0] = w.m[1] = 0.f;
}

// words8 is the 16-byte aligned 32 bytes at p as words.
static __device__ __forceinline__ void words8(const uint8_t *p, uint32_t out[8]) {
  const uint4 a = ld128(p), b = ld128(p + 16);
  out[0] = a.x, out[1] = a.y, out[2] = a.z, out[3] = a.w, out[4] = b.x, out[5] = b.y, out[6] = b.z, out[7] = b.w;
}

// Q6_K: 256-value blocks of {u8 ql[128]; u8 qh[64]; int8 scales[16]; f16
// d}, 210 bytes, 2-byte aligned. Half n (128 values) uses ql[64n..64n+64)
// and qh[32n..32n+32); in it, value l (< 32) is ql[l] low | qh[l] bits 0-1,
// value 32+l is ql[32+l] low | bits 2-3, value 64+l is ql[l] high | bits
// 4-5, value 96+l is ql[32+l] high | bits 6-7, all minus 32; each 16
// values have a scale. Group j is values 64j..64j+64 of the block.
template <> struct Group<T_Q6_K> {
  static __device__ __forceinline__ void load(const uint8_t *row, int g, int cols, G64 &w) {
    const uint8_t *p = row + 210 * (g >> 2);
    const int j = g & 3, n = j >> 1, sub = j & 1;
    uint32_t l0[8], l1[8], hb[8], sc[1];
    words_a2<8>(p + 64 * n, l0);
    words_a2<8>(p + 64 * n + 32, l1);
    words_a2<8>(p + 128 + 32 * n, hb);
    words_a2<1>(p + 192 + 8 * n + 4 * sub, sc);
    q6_group(l0, l1, hb, sc[0], h2f(ld16(p + 208)), sub, w);
  }
};

// T_WIDE added to a type code is the type in its wide layout
// (kernels/wide.go): every field at a 16-byte aligned offset.
#define T_WIDE 256

// Q8_0, wide: a row's 8-bit values (cols bytes), then its blocks' f16
// scales; group g is values 64g..64g+64 and scales 2g, 2g+1.
template <> struct Group<T_Q8_0 + T_WIDE> {
  static __device__ __forceinline__ void load(const uint8_t *row, int g, int cols, G64 &w) {
    const uint8_t *p = row + 64 * g;
    const uint4 v[4] = {ld128(p), ld128(p + 16), ld128(p + 32), ld128(p + 48)};
#pragma unroll
    for (int k = 0; k < 4; k++) w.q[4 * k] = (int)v[k].x, w.q[4 * k + 1] = (int)v[k].y, w.q[4 * k + 2] = (int)v[k].z, w.q[4 * k + 3] = (int)v[k].w;
    const uint32_t d = __ldg((const uint32_t *)(row + cols + 4 * g));
    const float d0 = h2f(d & 0xFFFF), d1 = h2f(d >> 16);
    w.c[0] = w.c[1] = d0, w.c[2] = w.c[3] = d1;
    w.m[0] = w.m[1] = 0.f;
  }
};

// Q6_K, wide: the blocks padded to 224 bytes, so ql, qh and the scales are
// read with 16-byte loads.
template <> struct Group<T_Q6_K + T_WIDE> {
  static __device__ __forceinline__ void load(const uint8_t *row, int g, int cols, G64 &w) {
    const uint8_t *p = row + 224 * (g >> 2);
    const int j = g & 3, n = j >> 1, sub = j & 1;
    uint32_t l0[8], l1[8], hb[8];
    words8(p + 64 * n, l0);
    words8(p + 64 * n + 32, l1);
    words8(p + 128 + 32 * n, hb);
    q6_group(l0, l1, hb, ld32(p + 192 + 8 * n + 4 * sub), h2f(ld16(p + 208)), sub, w);
  }
};

// Dot<T> says how group_dot sums a group of type T. Paired: the two
// 16-value pieces of each 32-value half share one multiplier, so each half
// is one integer sum (Q4_K, Q8_0; Q5_K and Q4_0 could be, but the extra
// registers of the paired sums make the batch tiles spill). HighU: the
// second half's values are unsigned bytes (Q4_K's high nibbles left in
// place, 16 times the value, with the multiplier divided by 16).
template <int T> struct Dot {
  static constexpr bool Paired = T == T_Q4_K || T == T_Q8_0 || T == T_Q8_0 + T_WIDE, HighU = T == T_Q4_K;
};

// dp4a_us is c plus the dot product of a's four unsigned bytes with b's
// four signed ones.
static __device__ __forceinline__ int dp4a_us(uint32_t a, int b, int c) {
  int d;
  asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
}

// group_dot is the dot product of a weight group of type T with the staged
// input group whose pieces are xp[0], xp[32], xp[64], xp[96] and scales xd.
template <int T>
static __device__ __forceinline__ float group_dot(const G64 &w, const int4 *xp, float4 xd) {
  if constexpr (Dot<T>::Paired) {
    int s0 = 0, s1 = 0;
#pragma unroll
    for (int k = 0; k < 2; k++) {
      const int4 x = xp[32 * k];
      s0 = __dp4a(w.q[4 * k], x.x, s0);
      s0 = __dp4a(w.q[4 * k + 1], x.y, s0);
      s0 = __dp4a(w.q[4 * k + 2], x.z, s0);
      s0 = __dp4a(w.q[4 * k + 3], x.w, s0);
    }
#pragma unroll
    for (int k = 2; k < 4; k++) {
      const int4 x = xp[32 * k];
      const int *h = w.q + 4 * k;
      if constexpr (Dot<T>::HighU) {
        s1 = dp4a_us(h[0], x.x, s1), s1 = dp4a_us(h[1], x.y, s1);
        s1 = dp4a_us(h[2], x.z, s1), s1 = dp4a_us(h[3], x.w, s1);
      } else {
        s1 = __dp4a(h[0], x.x, s1), s1 = __dp4a(h[1], x.y, s1);
        s1 = __dp4a(h[2], x.z, s1), s1 = __dp4a(h[3], x.w, s1);
      }
    }
    return xd.x * (w.c[0] * (float)s0) + xd.z * (w.c[2] * (float)s1) - (w.m[0] * xd.y + w.m[1] * xd.w);
  } else {
    int is[4];
#pragma unroll
    for (int k = 0; k < 4; k++) {
      const int4 x = xp[32 * k];
      int s = __dp4a(w.q[4 * k], x.x, 0);
      s = __dp4a(w.q[4 * k + 1], x.y, s);
      s = __dp4a(w.q[4 * k + 2], x.z, s);
      is[k] = __dp4a(w.q[4 * k + 3], x.w, s);
    }
    return xd.x * (w.c[0] * (float)is[0] + w.c[1] * (float)is[1]) +
           xd.z * (w.c[2] * (float)is[2] + w.c[3] * (float)is[3]) - (w.m[0] * xd.y + w.m[1] * xd.w);
  }
}

// xs16 is the int4s of staged 8-bit values per column: the values padded
// to whole tiles of 32 groups (2048 values).
static __device__ __forceinline__ int xs16(int cols) { return ((cols + 2047) >> 11) * 128; }

// row_pair accumulates the dot products of rows ra and rb with the nb
// staged input columns into acc, over groups first, first+step, ...
template <int T, int NB>
static __device__ __forceinline__ void row_pair(const uint8_t *ra, const uint8_t *rb, int cols, int nb,
                                                const int4 *xq, const float4 *xd, int first, int step,
                                                float acc[2][NB]) {
  const int G = cols >> 6;
  for (int g = first; g < G; g += step) {
    G64 wa, wb;
    Group<T>::load(ra, g, cols, wa);
    Group<T>::load(rb, g, cols, wb);
    const int piece0 = (g >> 5) * 128 + (g & 31);
#pragma unroll
    for (int b = 0; b < NB; b++) {
      if (b < nb) {
        const int4 *xp = xq + (size_t)b * xs16(cols) + piece0;
        const float4 x4 = xd[(size_t)b * G + g];
        acc[0][b] += group_dot<T>(wa, xp, x4);
        acc[1][b] += group_dot<T>(wb, xp, x4);
      }
    }
  }
}

// STAGE_V is how many float4s of a column each thread holds while staging
// (columns of up to STAGE_V*4*THREADS values are read in one go).
#define STAGE_V 4

// STAGE_T is how many threads sum a column's squares in stage_scale,
// whatever the block size, so that kernels of every block size (mvq_1 has
// 512 threads, the batch tiles 256) normalize a column to the same bits.
#define STAGE_T 256

// stage_scale is the RMSNorm scale of input row xr (1 without a norm),
// computed by the block's first STAGE_T threads: the sum of squares in a
// fixed order, thread, then warp, then block.
template <int THREADS>
static __device__ __forceinline__ float stage_scale(const MVArgs &a, const float *xr, float *red) {
  static_assert(THREADS % STAGE_T == 0, "stage_scale: blocks of a multiple of STAGE_T threads");
  if (a.norm == nullptr) return 1.f;
  const int n4 = a.cols >> 2;
  float ss = 0.f;
  for (int t0 = 0; t0 < n4 && threadIdx.x < STAGE_T; t0 += STAGE_V * STAGE_T) {
    float4 v[STAGE_V];
#pragma unroll
    for (int k = 0; k < STAGE_V; k++) {
      const int t = t0 + k * STAGE_T + threadIdx.x;
      v[k] = t < n4 ? __ldg((const float4 *)xr + t) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int k = 0; k < STAGE_V; k++) ss += v[k].x * v[k].x + v[k].y * v[k].y + v[k].z * v[k].z + v[k].w * v[k].w;
  }
  return 1.f / sqrtf(block_sum<STAGE_T / 32>(ss, red) / (float)a.cols + a.eps);
}

// stage_q8 writes columns b0..b0+nb of the (normalized) input to shared
// memory as 8-bit values and scales, in the layout described at the top.
// Each thread issues all its loads of a stretch of a column before using
// any, so the staging costs one memory round trip per stretch, not one per
// value; the first stretch's loads go out before the norm's sum of squares
// (stage_scale), so that pass over the column and this one share a trip.
// Without SUM the blocks' sums of q are left zero: group_dot multiplies
// them by the weights' minimums, which wide Q8_0 (mv8_1) does not have.
template <int THREADS, bool SUM>
static __device__ __forceinline__ void stage_q8(const MVArgs &a, int b0, int nb, uint32_t *xq, float2 *xd,
                                                float *red) {
  const int cols = a.cols, n4 = cols >> 2;
  for (int b = 0; b < nb; b++) {
    const float *xr = a.x + (size_t)(b0 + b) * cols;
    float4 v[STAGE_V], w[STAGE_V];
    const auto load = [&](int t0) {
#pragma unroll
      for (int k = 0; k < STAGE_V; k++) {
        const int t = t0 + k * THREADS + threadIdx.x;
        const bool in = t < n4;
        v[k] = in ? __ldg((const float4 *)xr + t) : make_float4(0.f, 0.f, 0.f, 0.f);
        w[k] = in && a.norm != nullptr ? __ldg((const float4 *)a.norm + t) : make_float4(1.f, 1.f, 1.f, 1.f);
      }
    };
    load(0);
    const float scale = stage_scale<THREADS>(a, xr, red);
    for (int t0 = 0; t0 < n4; t0 += STAGE_V * THREADS) {
      if (t0 > 0) load(t0);
#pragma unroll
      for (int k = 0; k < STAGE_V; k++) {
        if (t0 + k * THREADS >= n4) break; // the whole block is past the column
        const int t = t0 + k * THREADS + threadIdx.x;
        float4 x = v[k];
        if (a.norm != nullptr)
          x = make_float4(x.x * scale * w[k].x, x.y * scale * w[k].y, x.z * scale * w[k].z, x.w * scale * w[k].w);
        float d;
        int qs;
        const uint32_t q = q8_quad<SUM>(x, &d, &qs);
        if (t < n4) {
          const int g = t >> 4, wd = t & 15;
          xq[((size_t)b * xs16(cols) + ((g >> 5) * 4 + (wd >> 2)) * 32 + (g & 31)) * 4 + (wd & 3)] = q;
          if ((t & 7) == 0) xd[(size_t)b * (cols >> 5) + (t >> 3)] = make_float2(d, d * (float)qs);
        }
      }
    }
  }
}
