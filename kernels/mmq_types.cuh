// mmq_types.cuh: the shared-memory stage layouts (WLayout<T>, see mmq.cu)
// of Q4_1, Q5_0 and Q5_1 (32-value blocks, read by frag like Q4_0), and of
// the types with a scale per 16 values, Q2_K, Q3_K and Q6_K (read by
// frag16). Included by mmq.cu after its own layouts.
//
// Q3_K and Q6_K blocks (110 and 210 bytes) leave their rows only 2-byte
// aligned, so a stage copies each field it needs (a section) as the 4-byte
// words that cover it from its start rounded down to 4 bytes (load_w), and
// keeps that offset o (0 or 2; the same for every field of a block, all at
// 4-byte multiples in it) in byte obyte of the stage row; frag16 reads the
// field at its section plus o.

// h2f_at reads an f16 from a 2-byte aligned shared address.
static __device__ __forceinline__ float h2f_at(const uint8_t *p) { return __half2float(*(const __half *)p); }

// spread4 moves bits 0..3 of x to bit 4 of bytes 0..3 (the fifth bits of
// four Q5_0 or Q5_1 values): the four shifted copies of x do not overlap,
// so the product carries nothing.
static __device__ __forceinline__ int spread4(uint32_t x) { return (int)(((x * 0x00204081u) & 0x01010101u) << 4); }

// Q4_1 as stored: 20-byte blocks (f16 d, f16 m, 16 bytes of nibbles as
// Q4_0), w = d·q + m: the min is −m.
template <> struct WLayout<MMQ_T_Q4_1> {
  static constexpr int block = 20;
  static constexpr int stride = 80; // 80 bytes of blocks
  static constexpr bool has_min = true, sub16 = false;
  static __device__ __forceinline__ void frag(const uint8_t *row, int j, int t, int, int &lo, int &hi, float &dw, float &mw) {
    const uint8_t *blk = row + j * 20;
    const int q = ld32u(blk + 4 + 4 * t);
    lo = q & 0x0F0F0F0F;
    hi = (q >> 4) & 0x0F0F0F0F;
    dw = h2f_at(blk);
    mw = -h2f_at(blk + 2);
  }
};

// Q5_0 as stored: 22-byte blocks (f16 d, qh[4]: bit l is the fifth bit of
// value l, 16 bytes of nibbles as Q4_0), w = d·(q − 16).
template <> struct WLayout<MMQ_T_Q5_0> {
  static constexpr int block = 22;
  static constexpr int stride = 112; // 88 bytes of blocks, padded
  static constexpr bool has_min = false, sub16 = false;
  static __device__ __forceinline__ void frag(const uint8_t *row, int j, int t, int, int &lo, int &hi, float &dw, float &mw) {
    const uint8_t *blk = row + j * 22;
    const uint32_t qh = (uint32_t)ld32u(blk + 2);
    const int q = ld32u(blk + 6 + 4 * t);
    lo = __vsub4((q & 0x0F0F0F0F) | spread4((qh >> (4 * t)) & 15), 0x10101010);
    hi = __vsub4(((q >> 4) & 0x0F0F0F0F) | spread4((qh >> (16 + 4 * t)) & 15), 0x10101010);
    dw = h2f_at(blk);
    mw = 0.0f;
  }
};

// Q5_1 as stored: 24-byte blocks (f16 d, f16 m, qh[4], 16 bytes of
// nibbles), w = d·q + m.
template <> struct WLayout<MMQ_T_Q5_1> {
  static constexpr int block = 24;
  static constexpr int stride = 112; // 96 bytes of blocks, padded
  static constexpr bool has_min = true, sub16 = false;
  static __device__ __forceinline__ void frag(const uint8_t *row, int j, int t, int, int &lo, int &hi, float &dw, float &mw) {
    const uint8_t *blk = row + j * 24;
    const uint32_t qh = (uint32_t)ld32u(blk + 4);
    const int q = ld32u(blk + 8 + 4 * t);
    lo = (q & 0x0F0F0F0F) | spread4((qh >> (4 * t)) & 15);
    hi = ((q >> 4) & 0x0F0F0F0F) | spread4((qh >> (16 + 4 * t)) & 15);
    dw = h2f_at(blk);
    mw = -h2f_at(blk + 2);
  }
};

// q6_frag reads block j (0..3) of a stage of Q6_K, a half super-block
// (128 values): ql its 64 bytes of low nibbles, qh its 32 bytes of high
// bits, sc its 8 int8 scales, d the f16 block scale. Value l (< 32) of
// block j is nibble j/2 of ql[32(j%2) + l] with bits 2j, 2j+1 of qh[l] on
// top, less 32 (subtracted in the fragment: the values fit int8); values
// 0..15 have scale sc[2j], 16..31 sc[2j+1]. U: the fields are only 2-byte
// aligned.
template <bool U>
static __device__ __forceinline__ void q6_frag(const uint8_t *ql, const uint8_t *qh, const uint8_t *sc, const uint8_t *d,
                                               int j, int t, int &lo, int &hi, float2 &dw) {
  const uint8_t *l = ql + 32 * (j & 1);
  const int sh = 4 * (j >> 1), hs = 2 * j;
  const int l0 = U ? ld32u(l + 4 * t) : *(const int *)(l + 4 * t);
  const int l1 = U ? ld32u(l + 16 + 4 * t) : *(const int *)(l + 16 + 4 * t);
  const int h0 = U ? ld32u(qh + 4 * t) : *(const int *)(qh + 4 * t);
  const int h1 = U ? ld32u(qh + 16 + 4 * t) : *(const int *)(qh + 16 + 4 * t);
  lo = __vsub4(((l0 >> sh) & 0x0F0F0F0F) | (((h0 >> hs) & 0x03030303) << 4), 0x20202020);
  hi = __vsub4(((l1 >> sh) & 0x0F0F0F0F) | (((h1 >> hs) & 0x03030303) << 4), 0x20202020);
  const float dd = h2f_at(d);
  dw = make_float2(dd * (float)(int8_t)sc[2 * j], dd * (float)(int8_t)sc[2 * j + 1]);
}

// Q6_K wide (224-byte blocks: ql[128], qh[64], scales[16], d at 0, 128,
// 192, 208). A stage row: the half's ql (64 bytes), its qh (32), all the
// scales (16), then d and 14 bytes of padding; eight 16-byte chunks.
template <> struct WLayout<MMQ_T_Q6_K + MMQ_T_WIDE> {
  static constexpr int stride = 144; // 128 bytes, padded
  static constexpr bool has_min = false, sub16 = true;
  static __device__ __forceinline__ void frag16(const uint8_t *row, int j, int t, int h, int &lo, int &hi, float2 &dw, float2 &mw) {
    q6_frag<false>(row, row + 64, row + 96 + 8 * h, row + 112, j, t, lo, hi, dw);
    mw = make_float2(0.0f, 0.0f);
  }
};

// Q6_K as stored (210-byte blocks, fields as wide). Sections: the half's
// ql (64 bytes at 64h, 17 words, stored at 0), its qh (32 at 128 + 32h, 9
// words, at 68), the scales and d (18 at 192, 5 words, at 104); o at 124.
template <> struct WLayout<MMQ_T_Q6_K> {
  static constexpr int stride = 144; // 125 bytes, padded
  static constexpr int bytes = 210, words = 31, obyte = 124;
  static constexpr bool has_min = false, sub16 = true;
  static __device__ __forceinline__ void section(int u, int h, int &off, int &len, int &at, int &w) {
    if (u < 17) {
      off = 64 * h, len = 64, at = 0, w = u;
    } else if (u < 26) {
      off = 128 + 32 * h, len = 32, at = 68, w = u - 17;
    } else {
      off = 192, len = 18, at = 104, w = u - 26;
    }
  }
  static __device__ __forceinline__ void frag16(const uint8_t *row, int j, int t, int h, int &lo, int &hi, float2 &dw, float2 &mw) {
    const int o = row[obyte];
    q6_frag<true>(row + o, row + 68 + o, row + 104 + o + 8 * h, row + 120 + o, j, t, lo, hi, dw);
    mw = make_float2(0.0f, 0.0f);
  }
};

// Q2_K as stored: 84-byte blocks (scales[16]: scale low nibble, min high
// nibble, per 16 values; qs[64]; f16 d, dmin), w = d·sc·q − dmin·m. Half
// h's block j: value l (< 32) is bits 2j, 2j+1 of qs[32h + l], its scale
// byte 8h + 2j (values 0..15) or 8h + 2j + 1. A stage row: the half's 8
// scale bytes, its 32 bytes of qs, d and dmin; eleven 4-byte words.
template <> struct WLayout<MMQ_T_Q2_K> {
  static constexpr int stride = 48; // 44 bytes, padded
  static constexpr bool has_min = true, sub16 = true;
  static __device__ __forceinline__ void frag16(const uint8_t *row, int j, int t, int, int &lo, int &hi, float2 &dw, float2 &mw) {
    const int q0 = *(const int *)(row + 8 + 4 * t), q1 = *(const int *)(row + 24 + 4 * t);
    lo = (q0 >> (2 * j)) & 0x03030303;
    hi = (q1 >> (2 * j)) & 0x03030303;
    const float d = h2f_at(row + 40), dm = h2f_at(row + 42);
    const int s0 = row[2 * j], s1 = row[2 * j + 1];
    dw = make_float2(d * (float)(s0 & 15), d * (float)(s1 & 15));
    mw = make_float2(dm * (float)(s0 >> 4), dm * (float)(s1 >> 4));
  }
};

// q3_scale is the signed 6-bit scale of group g (0..15) from a Q3_K
// block's 12 packed scale bytes (gguf.ScalesQ3K).
static __device__ __forceinline__ int q3_scale(const uint8_t *sc, int g) {
  const int lo = (sc[g & 7] >> (4 * (g >> 3))) & 15;
  const int hi = (sc[8 + (g & 3)] >> (2 * (g >> 2))) & 3;
  return (lo | (hi << 4)) - 32;
}

// Q3_K as stored: 110-byte blocks (hmask[32], qs[64], scales[12], f16 d),
// w = d·sc·q. Half h's block j: value l (< 32) is bits 2j, 2j+1 of
// qs[32h + l], less 4 unless bit 4h + j of hmask[l] is set; its scale is
// group 8h + 2j (values 0..15) or 8h + 2j + 1. Sections: hmask (32 bytes at
// 0, 9 words, stored at 0), the half's qs (32 at 32 + 32h, 9 words, at 36),
// the scales and d (14 at 96, 4 words, at 72); o at 88.
template <> struct WLayout<MMQ_T_Q3_K> {
  static constexpr int stride = 112; // 89 bytes, padded
  static constexpr int bytes = 110, words = 22, obyte = 88;
  static constexpr bool has_min = false, sub16 = true;
  static __device__ __forceinline__ void section(int u, int h, int &off, int &len, int &at, int &w) {
    if (u < 9) {
      off = 0, len = 32, at = 0, w = u;
    } else if (u < 18) {
      off = 32 + 32 * h, len = 32, at = 36, w = u - 9;
    } else {
      off = 96, len = 14, at = 72, w = u - 18;
    }
  }
  static __device__ __forceinline__ void frag16(const uint8_t *row, int j, int t, int h, int &lo, int &hi, float2 &dw, float2 &mw) {
    const int o = row[obyte];
    const uint8_t *hm = row + o, *qs = row + 36 + o, *sc = row + 72 + o;
    const int q0 = ld32u(qs + 4 * t), q1 = ld32u(qs + 16 + 4 * t);
    const int m0 = ld32u(hm + 4 * t), m1 = ld32u(hm + 16 + 4 * t);
    const int hs = 4 * h + j;
    lo = __vsub4(((q0 >> (2 * j)) & 0x03030303) | (((m0 >> hs) & 0x01010101) << 2), 0x04040404);
    hi = __vsub4(((q1 >> (2 * j)) & 0x03030303) | (((m1 >> hs) & 0x01010101) << 2), 0x04040404);
    const float d = h2f_at(sc + 12);
    dw = make_float2(d * (float)q3_scale(sc, 8 * h + 2 * j), d * (float)q3_scale(sc, 8 * h + 2 * j + 1));
    mw = make_float2(0.0f, 0.0f);
  }
};
