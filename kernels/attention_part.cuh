// attention_part.cuh: the decode attention's partial results over a KV
// cache, written once for both caches: attention.cu instantiates it over
// the per-slot f32 cache (attention_part_<S>: float, KVFlat) and
// attention_paged.cu over the paged f16 pool (attention_part_pf16_<S>:
// __half, KVPaged). The element type decides the shared-memory rows and
// the arithmetic on them (AttElem), the addressing where a tile's rows
// come from (AttRows); everything else (the split of the positions, the
// tiles, the scores, the online softmax, the accumulation and the partial
// results) is one body. attention.cu's attention_merge merges the splits of
// both.
#pragma once

#include <cuda_fp16.h>

#include "kv.cuh"
#include "overlap.cuh"

#define ATT_THREADS 128
#define ATT_MAXG 8  // query heads per KV head
#define ATT_TILE 32 // positions per tile of attention_part at most (one per lane)

// cp_async16 copies 16 bytes from global to shared memory without
// passing through registers (sm_80 and newer); cp_async_wait waits for
// every copy this thread issued.
static __device__ __forceinline__ void cp_async16(void *dst, const void *src) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(src));
}
static __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;" ::: "memory");
}
// cp_async_commit closes this thread's copies issued so far into a group;
// cp_async_wait_prev closes the copies since into another and waits for
// every group but that last one.
static __device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
static __device__ __forceinline__ void cp_async_wait_prev() {
  asm volatile("cp.async.commit_group;\ncp.async.wait_group 1;" ::: "memory");
}

// AttElem<T> is a cache of element type T in attention_part: a K or V row
// is copied to shared memory as it is stored, 16 bytes (VEC values,
// 1 << SHIFT) at a time; dot is a query row (f32, scaled) times a K row,
// value a V element as f32. Smem is the type the dynamic shared memory is
// declared with (f32 rows: float; f16 rows: bytes), as each kernel had it
// before the two shared this body: the compiler's address arithmetic, and
// so the machine code, follows it.
template <typename T> struct AttElem;

template <> struct AttElem<float> {
  static constexpr int SHIFT = 2, VEC = 4;
  using Smem = float;
  static __device__ __forceinline__ float dot(const float *q, const float *k, int headDim) {
    const float4 *qv = (const float4 *)q, *kv = (const float4 *)k;
    float d = 0.f;
#pragma unroll 8
    for (int i = 0; i < headDim >> 2; i++) {
      const float4 x = qv[i], y = kv[i];
      d += x.x * y.x + x.y * y.y + x.z * y.z + x.w * y.w;
    }
    return d;
  }
  static __device__ __forceinline__ float value(float v) { return v; }
};

template <> struct AttElem<__half> {
  static constexpr int SHIFT = 3, VEC = 8;
  using Smem = unsigned char;
  static __device__ __forceinline__ float dot(const float *q, const __half *k, int headDim) {
    const float2 *qv = (const float2 *)q;
    const __half2 *kv = (const __half2 *)k;
    float d = 0.f;
#pragma unroll 8
    for (int i = 0; i < headDim / 2; i++) {
      const float2 x = qv[i], y = __half22float2(kv[i]);
      d += x.x * y.x + x.y * y.y;
    }
    return d;
  }
  static __device__ __forceinline__ float value(__half v) { return __half2float(v); }
};

// AttRows<T, A> are the K and V rows of one sequence slot and KV head in
// a cache of T addressed by A (kv.cuh). if_live(a, s, p, f) runs f when
// position p of slot s has a cell (the token is not padding; a callback
// rather than a bool, so that the test stays one plain branch in each
// kernel's code). copy(ks, vs, pitch, headDim, tt, j, e) issues the
// 16-byte copies of values e.. of position tt+j's K and V rows to row j of
// the tile's K rows ks (pitch values apart) and V rows vs (headDim apart).
// The positions attention_part walks are those of a live token (0..pos[b]),
// so only a cache with holes (a paged pool's block ids) checks each row.
// With early, a single-token step copies the first tile's rows but the
// token's own before it waits for the kernel ahead (which writes that
// row); without, every copy waits for it.
template <typename T, typename A> struct AttRows;

// The per-slot cache: slot s's rows are consecutive, kvdim values apart.
template <typename T> struct AttRows<T, KVFlat> {
  static constexpr bool early = true;
  const T *k, *v; // position 0 of the slot's KV head
  int kvdim;      // values per position (every KV head)
  template <typename F> static __device__ __forceinline__ void if_live(const KVFlat &a, int s, int p, F f) {
    if (s >= 0 && s < a.maxSeqs && p >= 0 && p < a.ctx) f();
  }
  __device__ __forceinline__ AttRows(const T *kc, const T *vc, const KVFlat &a, int s, int kvh, int headDim,
                                     int kvdim)
      : k(kc + (size_t)max(s, 0) * a.ctx * kvdim + (size_t)kvh * headDim),
        v(vc + (size_t)max(s, 0) * a.ctx * kvdim + (size_t)kvh * headDim), kvdim(kvdim) {}
  __device__ __forceinline__ void copy(T *ks, T *vs, int pitch, int headDim, int tt, int j, int e) const {
    cp_async16(ks + j * pitch + e, k + (size_t)(tt + j) * kvdim + e);
    cp_async16(vs + j * headDim + e, v + (size_t)(tt + j) * kvdim + e);
  }
};

// The paged pool: each row from its own cell (a tile may cross blocks);
// a row whose cell is -1 is zeros.
template <typename T> struct AttRows<T, KVPaged> {
  static constexpr bool early = false;
  const T *kc, *vc; // the pools
  KVPool pool;      // the block table
  int s, kvh, kvdim; // the slot, the KV head, values per position
  template <typename F> static __device__ __forceinline__ void if_live(const KVPaged &a, int s, int p, F f) {
    if (kv_cell(a.pool, s, p) >= 0) f();
  }
  __device__ __forceinline__ AttRows(const T *kc, const T *vc, const KVPaged &a, int s, int kvh, int headDim,
                                     int kvdim)
      : kc(kc), vc(vc), pool(a.pool), s(s), kvh(kvh), kvdim(kvdim) {}
  __device__ __forceinline__ void copy(T *ks, T *vs, int pitch, int headDim, int tt, int j, int e) const {
    const long long cell = kv_cell(pool, s, tt + j);
    if (cell >= 0) {
      const size_t at = (size_t)kvh * headDim + e;
      cp_async16(ks + j * pitch + e, kv_at(kc, cell, kvdim) + at);
      cp_async16(vs + j * headDim + e, kv_at(vc, cell, kvdim) + at);
    } else {
      *(uint4 *)(ks + j * pitch + e) = make_uint4(0, 0, 0, 0);
      *(uint4 *)(vs + j * headDim + e) = make_uint4(0, 0, 0, 0);
    }
  }
};

// attention_part<S, T, A>: for token b, KV head kvh and split s of the
// positions first..pos[b] of slot seq[b] (split s covers the s-th of
// `splits` equal ranges; first = max(0, pos[b]+1-window) with a window > 0,
// else 0), the online-softmax partial result of each of the
// G = heads/kvHeads query heads that share the KV head over that range:
// the running max m, the sum l of exp(score - m) (a score is q·k·scale,
// then cap·tanh(score/cap) when cap > 0: soft-capping) and the unnormalized
// weighted sum of V, written to
// part[((b*heads + h)*splits + s)*(headDim + 2) + ...] as acc[0..headDim),
// m, l. A token whose position has no cell (R::if_live: padding) walks
// nothing and writes m = -inf, l = 0. Grid (B, kvHeads, splits),
// ATT_THREADS threads, dynamic shared memory of a tile's K rows (pitch
// headDim + VEC, so rows start on other banks) and V rows (headDim) of T,
// the scaled queries (G × headDim) and the scores (G × tile) in f32:
// attentionShared(tile) and attentionPagedShared(tile) bytes.
//
// The range is walked in tiles of `tile` (≤ ATT_TILE) positions. A tile's
// K and V rows are copied to shared memory all at once (cp.async), so a
// tile costs one memory round trip; over the paged pool (no early copies)
// the tiles alternate between two buffers, the next tile's copies (and
// their block-table reads) in flight while this one is computed, which
// doubles the bytes a block has in flight (its f16 rows are half the f32
// cache's; dynamic shared memory: both buffers). The first tile's copies are issued
// before the queries are staged (and, with AttRows::early, in a
// single-token step before the kernel waits for the one ahead: all but the
// token's own row, which that kernel writes). Then each thread computes
// scores of (head, position) pairs, one warp per head turns a tile's
// scores into weights (one position per lane), and each thread accumulates
// weights times V for its (head, dimension) slots, in f32.
//
// S is the (head, dimension) slots per thread: the smallest of 2, 4, 8 and
// 16 with S*ATT_THREADS ≥ G*headDim, so the kernel's code holds no unused
// slots.
template <int S, typename T, typename A>
static __device__ __forceinline__ void attention_part(const float *__restrict__ q, const T *__restrict__ kc,
                                                      const T *__restrict__ vc, float *__restrict__ part,
                                                      const int *__restrict__ pos, const int *__restrict__ seq,
                                                      int heads, int kvHeads, int headDim, float scale, int tile,
                                                      float cap, int window, const A addr) {
  using E = AttElem<T>;
  using R = AttRows<T, A>;
  extern __shared__ __align__(16) typename E::Smem att_smem[];
  __shared__ float mS[ATT_MAXG], lS[ATT_MAXG], corrS[ATT_MAXG];
  const int b = blockIdx.x, kvh = blockIdx.y, split = blockIdx.z, splits = gridDim.z;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int G = heads / kvHeads, kvdim = kvHeads * headDim, ch = headDim >> E::SHIFT, pitch = headDim + E::VEC;
  constexpr bool DB = !R::early;              // two tile buffers (see above)
  T *ks = (T *)att_smem;                      // tile × pitch: K rows
  T *vs = ks + tile * pitch;                  // tile × headDim: V rows
  T *ks2 = DB ? vs + tile * headDim : ks;     // the second buffer's K rows
  T *vs2 = DB ? ks2 + tile * pitch : vs;      // and V rows
  float *qs = (float *)(vs2 + tile * headDim); // G × headDim: the queries, scaled
  float *sc = qs + G * headDim;               // G × tile: scores, then weights
  const int s = seq[b], p = pos[b]; // only host copies write them
  int t0 = 0, t1 = 0; // positions [t0, t1) of this split
  R::if_live(addr, s, p, [&] {
    const int first = window > 0 ? max(0, p + 1 - window) : 0;
    const int n = p + 1 - first, per = (n + splits - 1) / splits;
    t0 = first + min(split * per, n);
    t1 = first + min(split * per + per, n);
  });
  const R rows(kc, vc, addr, s, kvh, headDim, kvdim);
  // fetch issues the copies of the K and V rows tt+j of a tile starting at
  // position tt, for j in [lo, hi) but j == skip (with R::early), to the
  // buffer kb, vb.
  auto fetch = [&](int tt, int lo, int hi, int skip, T *kb, T *vb) {
    for (int c = lo * ch + tid; c < hi * ch; c += ATT_THREADS) {
      const int j = c / ch, e = E::VEC * (c - j * ch);
      if (R::early && j == skip) continue;
      rows.copy(kb, vb, pitch, headDim, tt, j, e);
    }
  };
  const int n0 = min(tile, t1 - t0);
  if constexpr (R::early) {
    // A step of one token writes only its own position of the cache, in
    // the kernel ahead: the first tile's other rows are copied before
    // waiting for it (launched to overlap, the copies then run during its
    // last blocks), that row after.
    const bool early = gridDim.x == 1;
    if (early && t0 < t1) fetch(t0, 0, n0, p - t0, ks, vs);
    grid_wait();
    if (t0 < t1) {
      if (!early) {
        fetch(t0, 0, n0, -1, ks, vs);
      } else if (p < t0 + n0) {
        fetch(t0, p - t0, p - t0 + 1, -1, ks, vs);
      }
    }
  } else {
    grid_wait();
    if (t0 < t1) fetch(t0, 0, n0, -1, ks, vs);
    cp_async_commit();
  }
  const float *qh = q + ((size_t)b * heads + (size_t)kvh * G) * headDim;
  for (int i = tid; i < G * headDim; i += ATT_THREADS) qs[i] = qh[i] * scale;
  if (tid < G) mS[tid] = -INFINITY, lS[tid] = 0.f;
  const int slots = G * headDim; // (head, dimension) pairs, S at most per thread
  float acc[S];
#pragma unroll
  for (int k = 0; k < S; k++) acc[k] = 0.f;
  for (int tt = t0, cur = 0; tt < t1; tt += tile, cur ^= 1) {
    const int n = min(tile, t1 - tt);
    const T *kb = DB && cur ? ks2 : ks, *vb = DB && cur ? vs2 : vs;
    if constexpr (DB) {
      // The other buffer was last read before the previous tile's end.
      if (tt + tile < t1) fetch(tt + tile, 0, min(tile, t1 - tt - tile), -1, cur ? ks : ks2, cur ? vs : vs2);
      cp_async_wait_prev();
    } else {
      cp_async_wait();
    }
    __syncthreads();
    for (int idx = tid; idx < G * n; idx += ATT_THREADS) {
      const int g = idx / n, j = idx - g * n;
      const float d = E::dot(qs + g * headDim, kb + j * pitch, headDim);
      sc[g * tile + j] = cap > 0.f ? cap * tanhf(d / cap) : d;
    }
    __syncthreads();
    for (int g = warp; g < G; g += ATT_THREADS / 32) {
      const float v = lane < n ? sc[g * tile + lane] : -INFINITY;
      float m = v;
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
      const float mOld = mS[g], mNew = fmaxf(mOld, m);
      const float e = lane < n ? expf(v - mNew) : 0.f;
      float sum = e;
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
      if (lane < n) sc[g * tile + lane] = e;
      if (lane == 0) {
        const float corr = mOld == -INFINITY ? 0.f : expf(mOld - mNew);
        corrS[g] = corr, lS[g] = lS[g] * corr + sum, mS[g] = mNew;
      }
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < S; k++) {
      const int idx = tid + k * ATT_THREADS;
      if (idx < slots) {
        const int g = idx / headDim, d = idx - g * headDim;
        const float *w = sc + g * tile;
        float a = acc[k] * corrS[g];
        for (int j = 0; j < n; j++) a += w[j] * E::value(vb[j * headDim + d]);
        acc[k] = a;
      }
    }
    __syncthreads();
    if constexpr (!DB) {
      if (tt + tile < t1) fetch(tt + tile, 0, min(tile, t1 - tt - tile), -1, ks, vs);
    }
  }
#pragma unroll
  for (int k = 0; k < S; k++) {
    const int idx = tid + k * ATT_THREADS;
    if (idx < slots) {
      const int g = idx / headDim, d = idx - g * headDim;
      part[(((size_t)b * heads + (size_t)kvh * G + g) * splits + split) * (headDim + 2) + d] = acc[k];
    }
  }
  if (tid < G) {
    float *o = part + (((size_t)b * heads + (size_t)kvh * G + tid) * splits + split) * (headDim + 2);
    o[headDim] = mS[tid];
    o[headDim + 1] = lS[tid];
  }
  // The next kernel may start only as this one's blocks end: started at
  // once (grid_begin), an overlapping merge and output product cost 8B
  // Q8_0 a quarter of its speed at position 512 (253 against 334 tok/s).
  grid_launch();
}
