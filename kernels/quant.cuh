// quant.cuh: dequantization of 32-value chunks of a GGUF tensor row, shared
// by the matrix-vector and embedding kernels. A row of `cols` values is
// cols/32 chunks; load_chunk<T>(row, c, w) writes values [32c, 32c+32) of
// the row into w. Block layouts are ggml's.
#pragma once
#include <cuda_fp16.h>
#include <stdint.h>

// ggml type numbers (gguf.Type).
#define T_F32 0
#define T_F16 1
#define T_Q4_0 2
#define T_Q4_1 3
#define T_Q5_0 6
#define T_Q5_1 7
#define T_Q8_0 8
#define T_Q2_K 10
#define T_Q3_K 11
#define T_Q4_K 12
#define T_Q5_K 13
#define T_Q6_K 14
#define T_BF16 30

static __device__ __forceinline__ float h2f(uint16_t h) { return __half2float(__ushort_as_half(h)); }
static __device__ __forceinline__ float bf2f(uint32_t h) { return __uint_as_float(h << 16); }
// u2f is v (an integer below 2^23) minus bias (an integer constant) as a
// float, exactly, with an integer OR and one float add instead of the
// slower conversion instruction.
static __device__ __forceinline__ float u2f(uint32_t v, float bias = 0.f) {
  return __int_as_float(0x4B000000u | v) - (8388608.f + bias);
}

// b2f is byte k (0..3, a constant) of v minus bias (an integer constant)
// as a float, exactly: one byte permute places the byte in the mantissa of
// 2^23, one add removes 2^23 + bias.
static __device__ __forceinline__ float b2f(uint32_t v, int k, float bias = 0.f) {
  return __int_as_float(__byte_perm(v, 0x4B000000u, 0x7540 | k)) - (8388608.f + bias);
}

// ld16x2 reads 4 bytes at a 2-byte aligned address as one word.
static __device__ __forceinline__ uint32_t ld16x2(const uint8_t *p) {
  return *(const uint16_t *)p | ((uint32_t) * (const uint16_t *)(p + 2) << 16);
}

// ld16 and ld32 read 2- and 4-byte aligned words.
static __device__ __forceinline__ uint32_t ld16(const uint8_t *p) { return *(const uint16_t *)p; }
static __device__ __forceinline__ uint32_t ld32(const uint8_t *p) { return *(const uint32_t *)p; }
// ld128 reads a 16-byte aligned vector.
static __device__ __forceinline__ uint4 ld128(const uint8_t *p) { return __ldg((const uint4 *)p); }

// load32bytes reads 32 bytes at a 2-byte aligned address.
static __device__ __forceinline__ void load32bytes_a2(const uint8_t *p, uint8_t *b) {
#pragma unroll
  for (int i = 0; i < 16; i++) {
    uint32_t v = ld16(p + 2 * i);
    b[2 * i] = v & 0xFF;
    b[2 * i + 1] = v >> 8;
  }
}

// byte_of is byte k (0..15, known only at run time) of a 16-byte vector,
// picked with selects so the vector stays in registers.
static __device__ __forceinline__ uint32_t byte_of(uint4 v, int k) {
  const uint32_t w = k < 8 ? (k < 4 ? v.x : v.y) : (k < 12 ? v.z : v.w);
  return (w >> (8 * (k & 3))) & 0xFF;
}

// k4scale_hdr is the 6-bit scale and min of sub-block j (0..7) from the first 16 bytes of a Q4_K/Q5_K block
// (d, dmin, scales) held in a vector.
static __device__ __forceinline__ void k4scale_hdr(uint4 h, int j, float *sc, float *m) {
  if (j < 4) {
    *sc = byte_of(h, 4 + j) & 63;
    *m = byte_of(h, 8 + j) & 63;
  } else {
    *sc = (byte_of(h, 8 + j) & 0xF) | ((byte_of(h, j) >> 6) << 4);
    *m = (byte_of(h, 8 + j) >> 4) | ((byte_of(h, 4 + j) >> 6) << 4);
  }
}

template <int T> struct Chunk;

template <> struct Chunk<T_F32> {
  static __device__ __forceinline__ void load(const uint8_t *row, int c, float *w) {
    const float4 *p = (const float4 *)(row + (size_t)c * 128);
#pragma unroll
    for (int i = 0; i < 8; i++) {
      float4 v = __ldg(p + i);
      w[4 * i] = v.x, w[4 * i + 1] = v.y, w[4 * i + 2] = v.z, w[4 * i + 3] = v.w;
    }
  }
};

template <> struct Chunk<T_F16> {
  static __device__ __forceinline__ void load(const uint8_t *row, int c, float *w) {
    const uint8_t *p = row + (size_t)c * 64;
#pragma unroll
    for (int i = 0; i < 4; i++) {
      uint4 v = ld128(p + 16 * i);
      const uint32_t u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int k = 0; k < 4; k++) {
        w[8 * i + 2 * k] = h2f(u[k] & 0xFFFF);
        w[8 * i + 2 * k + 1] = h2f(u[k] >> 16);
      }
    }
  }
};

template <> struct Chunk<T_BF16> {
  static __device__ __forceinline__ void load(const uint8_t *row, int c, float *w) {
    const uint8_t *p = row + (size_t)c * 64;
#pragma unroll
    for (int i = 0; i < 4; i++) {
      uint4 v = ld128(p + 16 * i);
      const uint32_t u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int k = 0; k < 4; k++) {
        w[8 * i + 2 * k] = bf2f(u[k] & 0xFFFF);
        w[8 * i + 2 * k + 1] = bf2f(u[k] >> 16);
      }
    }
  }
};

// Q8_0: {f16 d; int8 q[32]}, 34 bytes.
template <> struct Chunk<T_Q8_0> {
  static __device__ __forceinline__ void load(const uint8_t *row, int c, float *w) {
    const uint8_t *b = row + (size_t)c * 34;
    float d = h2f(ld16(b));
#pragma unroll
    for (int i = 0; i < 8; i++) {
      const uint32_t v = ld16x2(b + 2 + 4 * i) ^ 0x80808080u; // int8 + 128
#pragma unroll
      for (int k = 0; k < 4; k++) w[4 * i + k] = d * b2f(v, k, 128.f);
    }
  }
};

// Q4_0: {f16 d; u8 q[16]}, 18 bytes; value j is the low nibble of q[j],
// value j+16 the high one, both minus 8.
template <> struct Chunk<T_Q4_0> {
  static __device__ __forceinline__ void load(const uint8_t *row, int c, float *w) {
    const uint8_t *b = row + (size_t)c * 18;
    float d = h2f(ld16(b));
#pragma unroll
    for (int i = 0; i < 4; i++) {
      const uint32_t v = ld16x2(b + 2 + 4 * i);
      const uint32_t lo = v & 0x0F0F0F0Fu, hi = (v >> 4) & 0x0F0F0F0Fu;
#pragma unroll
      for (int k = 0; k < 4; k++) {
        w[4 * i + k] = d * b2f(lo, k, 8.f);
        w[4 * i + k + 16] = d * b2f(hi, k, 8.f);
      }
    }
  }
};

// Q4_1: {f16 d, m; u8 q[16]}, 20 bytes: d*q + m.
template <> struct Chunk<T_Q4_1> {
  static __device__ __forceinline__ void load(const uint8_t *row, int c, float *w) {
    const uint8_t *b = row + (size_t)c * 20;
    uint32_t dm = ld32(b);
    float d = h2f(dm & 0xFFFF), m = h2f(dm >> 16);
#pragma unroll
    for (int i = 0; i < 4; i++) {
      uint32_t v = ld32(b + 4 + 4 * i);
#pragma unroll
      for (int k = 0; k < 4; k++) {
        uint32_t q = (v >> (8 * k)) & 0xFF;
        w[4 * i + k] = d * u2f(q & 0xF) + m;
        w[4 * i + k + 16] = d * u2f(q >> 4) + m;
      }
    }
  }
};

// Q5_0: {f16 d; u8 qh[4]; u8 q[16]}, 22 bytes; bit j of qh is the fifth
// bit of value j, bit j+16 that of value j+16; values minus 16.
template <> struct Chunk<T_Q5_0> {
  static __device__ __forceinline__ void load(const uint8_t *row, int c, float *w) {
    const uint8_t *b = row + (size_t)c * 22;
    float d = h2f(ld16(b));
    uint32_t qh = ld16(b + 2) | (ld16(b + 4) << 16);
#pragma unroll
    for (int i = 0; i < 8; i++) {
      uint32_t v = ld16(b + 6 + 2 * i);
#pragma unroll
      for (int k = 0; k < 2; k++) {
        int j = 2 * i + k;
        uint32_t q = (v >> (8 * k)) & 0xFF;
        w[j] = d * u2f((q & 0xF) | (((qh >> j) & 1) << 4), 16.f);
        w[j + 16] = d * u2f((q >> 4) | (((qh >> (j + 16)) & 1) << 4), 16.f);
      }
    }
  }
};

// Q5_1: {f16 d, m; u8 qh[4]; u8 q[16]}, 24 bytes: d*q + m.
template <> struct Chunk<T_Q5_1> {
  static __device__ __forceinline__ void load(const uint8_t *row, int c, float *w) {
    const uint8_t *b = row + (size_t)c * 24;
    uint32_t dm = ld32(b);
    float d = h2f(dm & 0xFFFF), m = h2f(dm >> 16);
    uint32_t qh = ld32(b + 4);
#pragma unroll
    for (int i = 0; i < 4; i++) {
      uint32_t v = ld32(b + 8 + 4 * i);
#pragma unroll
      for (int k = 0; k < 4; k++) {
        int j = 4 * i + k;
        uint32_t q = (v >> (8 * k)) & 0xFF;
        w[j] = d * u2f((q & 0xF) | (((qh >> j) & 1) << 4)) + m;
        w[j + 16] = d * u2f((q >> 4) | (((qh >> (j + 16)) & 1) << 4)) + m;
      }
    }
  }
};

// Q2_K: {u8 scales[16]; u8 q[64]; f16 d, dmin}, 84 bytes per 256 values.
// Chunk s (0..7) of a block: half n = s/4, shift 2*(s%4) into q[32n..32n+32),
// scales 8n+2(s%4) (first 16 values) and the next (last 16).
template <> struct Chunk<T_Q2_K> {
  static __device__ __forceinline__ void load(const uint8_t *row, int c, float *w) {
    const uint8_t *b = row + (size_t)(c >> 3) * 84;
    int s = c & 7, n = s >> 2, j = s & 3;
    uint32_t dd = ld32(b + 80);
    float d = h2f(dd & 0xFFFF), dmin = h2f(dd >> 16);
    uint8_t q[32];
#pragma unroll
    for (int i = 0; i < 8; i++) {
      uint32_t v = ld32(b + 16 + 32 * n + 4 * i);
#pragma unroll
      for (int k = 0; k < 4; k++) q[4 * i + k] = (v >> (8 * k)) & 0xFF;
    }
#pragma unroll
    for (int h = 0; h < 2; h++) {
      uint32_t sc = b[8 * n + 2 * j + h];
      float dl = d * (sc & 0xF), ml = dmin * (sc >> 4);
#pragma unroll
      for (int l = 0; l < 16; l++) w[16 * h + l] = dl * u2f((q[16 * h + l] >> (2 * j)) & 3) - ml;
    }
  }
};

// Q3_K: {u8 hmask[32]; u8 q[64]; u8 scales[12]; f16 d}, 110 bytes per 256
// values; 16 signed 6-bit scales (minus 32); a clear hmask bit subtracts 4.
template <> struct Chunk<T_Q3_K> {
  static __device__ __forceinline__ float scale(const uint8_t *s, int i) {
    int lo = i < 8 ? (s[i] & 0xF) : (s[i - 8] >> 4);
    int hi = (s[8 + (i & 3)] >> (2 * (i >> 2))) & 3;
    return (float)((lo | (hi << 4)) - 32);
  }
  static __device__ __forceinline__ void load(const uint8_t *row, int c, float *w) {
    const uint8_t *b = row + (size_t)(c >> 3) * 110;
    int s = c & 7, n = s >> 2, j = s & 3;
    float d = h2f(ld16(b + 108));
    uint8_t q[32], hm[32];
    load32bytes_a2(b + 32 + 32 * n, q);
    load32bytes_a2(b, hm);
#pragma unroll
    for (int h = 0; h < 2; h++) {
      float dl = d * scale(b + 96, 8 * n + 2 * j + h);
#pragma unroll
      for (int l = 0; l < 16; l++) {
        // A set hmask bit adds 4 to the 2-bit value before the common -4.
        const uint32_t v = ((q[16 * h + l] >> (2 * j)) & 3) | ((hm[16 * h + l] >> (4 * n + j)) & 1) << 2;
        w[16 * h + l] = dl * u2f(v, 4.f);
      }
    }
  }
};

// Q4_K: {f16 d, dmin; u8 scales[12]; u8 q[128]}, 144 bytes per 256 values.
// Chunk s of a block: nibble s%2 of q[32(s/2)..+32), sub-block scale s.
template <> struct Chunk<T_Q4_K> {
  static __device__ __forceinline__ void load(const uint8_t *row, int c, float *w) {
    const uint8_t *b = row + (size_t)(c >> 3) * 144;
    int s = c & 7;
    const uint4 hdr = ld128(b);
    float d = h2f(hdr.x & 0xFFFF), dmin = h2f(hdr.x >> 16);
    float sc, m;
    k4scale_hdr(hdr, s, &sc, &m);
    const float dl = d * sc, ml = dmin * m;
    const uint4 q0 = ld128(b + 16 + 32 * (s >> 1)), q1 = ld128(b + 32 + 32 * (s >> 1));
    const uint32_t u[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
    const int sh = 4 * (s & 1);
#pragma unroll
    for (int i = 0; i < 8; i++) {
      const uint32_t n = (u[i] >> sh) & 0x0F0F0F0Fu;
#pragma unroll
      for (int k = 0; k < 4; k++) w[4 * i + k] = dl * b2f(n, k) - ml;
    }
  }
};

// Q5_K: {f16 d, dmin; u8 scales[12]; u8 qh[32]; u8 q[128]}, 176 bytes per
// 256 values; bit s of qh[l] is the fifth bit of value l of chunk s.
template <> struct Chunk<T_Q5_K> {
  static __device__ __forceinline__ void load(const uint8_t *row, int c, float *w) {
    const uint8_t *b = row + (size_t)(c >> 3) * 176;
    int s = c & 7;
    const uint4 hdr = ld128(b);
    float d = h2f(hdr.x & 0xFFFF), dmin = h2f(hdr.x >> 16);
    float sc, m;
    k4scale_hdr(hdr, s, &sc, &m);
    const float dl = d * sc, ml = dmin * m;
    const uint4 q0 = ld128(b + 48 + 32 * (s >> 1)), q1 = ld128(b + 64 + 32 * (s >> 1));
    const uint4 h0 = ld128(b + 16), h1 = ld128(b + 32);
    const uint32_t u[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
    const uint32_t hb[8] = {h0.x, h0.y, h0.z, h0.w, h1.x, h1.y, h1.z, h1.w};
    const int sh = 4 * (s & 1);
#pragma unroll
    for (int i = 0; i < 8; i++) {
      const uint32_t n = ((u[i] >> sh) & 0x0F0F0F0Fu) | (((hb[i] >> s) & 0x01010101u) << 4);
#pragma unroll
      for (int k = 0; k < 4; k++) w[4 * i + k] = dl * b2f(n, k) - ml;
    }
  }
};

// Q6_K: {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}, 210 bytes per 256
// values. Chunk s: half n = s/4, quarter r = s%4: low nibbles of
// ql[64n + 32(r%2) + l] (high ones when r >= 2), bits 2r of qh[32n + l],
// scale 8n + 2r + l/16; values minus 32.
template <> struct Chunk<T_Q6_K> {
  static __device__ __forceinline__ void load(const uint8_t *row, int c, float *w) {
    const uint8_t *b = row + (size_t)(c >> 3) * 210;
    int s = c & 7, n = s >> 2, r = s & 3;
    float d = h2f(ld16(b + 208));
    const uint8_t *ql = b + 64 * n + 32 * (r & 1), *qh = b + 128 + 32 * n;
    const int shl = 4 * (r >> 1), shh = 2 * r;
    const float d0 = d * (float)(int8_t)b[192 + 8 * n + 2 * r];
    const float d1 = d * (float)(int8_t)b[192 + 8 * n + 2 * r + 1];
#pragma unroll
    for (int i = 0; i < 8; i++) {
      const uint32_t v = ((ld16x2(ql + 4 * i) >> shl) & 0x0F0F0F0Fu) | (((ld16x2(qh + 4 * i) >> shh) & 0x03030303u) << 4);
#pragma unroll
      for (int k = 0; k < 4; k++) w[4 * i + k] = (i < 4 ? d0 : d1) * b2f(v, k, 32.f);
    }
  }
};
