// attention_vec.cuh: the decode attention's partial results over the paged
// f16 pool with each K and V row read once per block, 16 bytes a lane, and
// the group's queries and sums in registers. It computes what
// attention_part.cuh's attention_part computes (the same grid, splits,
// tiles and partial-result layout, so attention.cu's attention_merge
// merges either), laid out for long walks: there every thread computes a
// whole (head, position) dot product from shared memory, re-reading each
// K value once per query head and the queries once per position (4-way
// bank conflicts on f16 rows), and each (head, dimension) slot re-reads a
// V value per head; at depth 8000 of Llama 8B that kernel read the cache
// at ~0.9 TB/s, bound by shared-memory traffic, not by DRAM.
//
// Here a half warp owns one cache row at a time: lane l of it holds the
// dimensions 8c..8c+7 of chunk c = l + 16k (k < CPL) of every query head of
// the group, scaled, in registers, reads the row's chunk once (one 16-byte
// shared-memory read), multiplies it into each head's partial dot product,
// and the 16 lanes sum those with four shuffles a head. A warp takes rows
// 2i and 2i+1 of a tile at once (its two halves), the four warps the pairs
// i ≡ warp (mod 4); each warp keeps an online softmax (max, sum) per head
// over its rows, and the V rows of its pairs are summed into per-lane
// accumulators the same way (chunk by chunk, per head, in f32). At the end
// the two halves' accumulators are added (they share the warp's max) and
// the four warps' results merged through shared memory into one partial
// result per head. Rows are staged with cp.async, each from its own cell
// (zeros where it has none), in two tile buffers: the next tile's copies,
// their block-table reads issued together, in flight while one is computed.
#pragma once

#include <cuda_fp16.h>

#include "attention_part.cuh"
#include "kv.cuh"
#include "overlap.cuh"

#define ATT_VEC_WARPS (ATT_THREADS / 32)
#define ATT_VEC_STAGES 2 // tile buffers: one tile's copies in flight while one is computed (3 measured no faster)
#define ATT_VEC_MIN 32   // positions a split takes at least

// cp_async_wait_n waits until at most N of this thread's commit groups are
// still in flight.
template <int N> static __device__ __forceinline__ void cp_async_wait_n() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// ATT_VEC_TILE(CPL) is attention_vec's positions per tile for CPL chunks a
// lane: two buffers of K and V rows of up to 128 f16 values (CPL 1) or
// 256 (CPL 2) fit in 32 KiB either way (attentionVec.tile in kvpool.go).
#define ATT_VEC_TILE(CPL) (32 / (CPL))

// attention_vec<GM, CPL, USED>: attention_part's contract over the paged
// f16 pool, for groups of G ≤ GM query heads per KV head and heads of at
// most 128·CPL values (headDim a multiple of 8). Grid (B, kvHeads,
// splits), ATT_THREADS threads, dynamic shared memory
// attentionVec.shared(headDim) bytes (kvpool.go). With USED, a split
// takes minPer positions at least (not ATT_VEC_MIN), and the blocks whose
// results attention_merge_used does not read (the splits a token does not
// use, tokens outside the cache) return at once and write nothing. cap > 0
// soft-caps the scaled scores to cap·tanh(score/cap), and window > 0 walks
// only the last window positions up to a token's own, split as the whole
// walk would be (the _arch twins; the others pass 0 and 0).
template <int GM, int CPL, bool USED>
static __device__ __forceinline__ void attention_vec(const float *__restrict__ q, const __half *__restrict__ kc,
                                                     const __half *__restrict__ vc, float *__restrict__ part,
                                                     const int *__restrict__ pos, const int *__restrict__ seq,
                                                     int heads, int kvHeads, int headDim, float scale,
                                                     int minPer, float cap, int window, const KVPaged addr) {
  constexpr int TILE = ATT_VEC_TILE(CPL), NI = TILE / (2 * ATT_VEC_WARPS); // row pairs a warp takes per tile
  using R = AttRows<__half, KVPaged>;
  extern __shared__ __align__(16) unsigned char att_smem[];
  const int b = blockIdx.x, kvh = blockIdx.y, split = blockIdx.z, splits = gridDim.z;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, half = lane >> 4, hl = lane & 15;
  const int G = heads / kvHeads, kvdim = kvHeads * headDim, ch = headDim >> 3;
  // STAGES buffers of a tile's K rows then V rows.
  auto kbuf = [&](int i) { return (__half *)att_smem + (size_t)i * 2 * TILE * headDim; };
  const int s = seq[b], p = pos[b]; // only host copies write them
  int t0 = 0, t1 = 0;               // positions [t0, t1) of this split
  // A token uses as many of the splits as give each ATT_VEC_MIN (with
  // USED: minPer) positions at least (all of them from splits·min
  // positions on); the blocks of the others write empty results, or with
  // USED nothing. It depends on the token's position only, so a token's
  // result does not depend on the batch around it.
  const int mp = USED ? minPer : ATT_VEC_MIN;
  if constexpr (USED) {
    if (s < 0 || s >= addr.pool.maxSeqs || p < 0 || p >= kv_ctx(addr.pool) || split >= min(splits, (p + mp) / mp)) {
      grid_wait();
      grid_launch();
      return;
    }
  }
  R::if_live(addr, s, p, [&] {
    const int first = window > 0 ? max(0, p + 1 - window) : 0, n = p + 1 - first;
    const int used = min(splits, (n + mp - 1) / mp), per = (n + used - 1) / used;
    t0 = first + min(split * per, n);
    t1 = first + min(split * per + per, n);
  });
  // fetch copies the K and V rows of positions tt..tt+n-1 to buffer i: a
  // thread's (at most four) rows' cells first, so that their block-table
  // reads are in flight together, then its copies; zeros where a row has
  // no cell. Always one commit group, empty past the split.
  auto fetch = [&](int tt, int i) {
    const int n = min(TILE, t1 - tt);
    __half *kb = kbuf(i), *vb = kb + TILE * headDim;
    long long cell[4];
#pragma unroll
    for (int r = 0; r < 4; r++) {
      const int c = tid + r * ATT_THREADS;
      cell[r] = c < n * ch ? kv_cell(addr.pool, s, tt + c / ch) : -2;
    }
#pragma unroll
    for (int r = 0; r < 4; r++) {
      const int c = tid + r * ATT_THREADS, j = c / ch, e = 8 * (c - j * ch);
      if (cell[r] >= 0) {
        const size_t at = (size_t)kvh * headDim + e;
        cp_async16(kb + j * headDim + e, kv_at(kc, cell[r], kvdim) + at);
        cp_async16(vb + j * headDim + e, kv_at(vc, cell[r], kvdim) + at);
      } else if (cell[r] == -1) {
        *(uint4 *)(kb + j * headDim + e) = make_uint4(0, 0, 0, 0);
        *(uint4 *)(vb + j * headDim + e) = make_uint4(0, 0, 0, 0);
      }
    }
    cp_async_commit();
  };
  grid_wait();
#pragma unroll
  for (int i = 0; i < ATT_VEC_STAGES - 1; i++) fetch(t0 + i * TILE, i);

  // The lane's chunks of each head's query, scaled; zeros past the head.
  float qr[GM][CPL][8], acc[GM][CPL][8], m[GM], l[GM];
  const float *qh = q + ((size_t)b * heads + (size_t)kvh * G) * headDim;
#pragma unroll
  for (int g = 0; g < GM; g++) {
    m[g] = -INFINITY, l[g] = 0.f;
#pragma unroll
    for (int k = 0; k < CPL; k++) {
      const int c = hl + 16 * k;
      float4 a = make_float4(0.f, 0.f, 0.f, 0.f), z = a;
      if (g < G && c < ch) a = ((const float4 *)(qh + g * headDim + 8 * c))[0], z = ((const float4 *)(qh + g * headDim + 8 * c))[1];
      qr[g][k][0] = a.x * scale, qr[g][k][1] = a.y * scale, qr[g][k][2] = a.z * scale, qr[g][k][3] = a.w * scale;
      qr[g][k][4] = z.x * scale, qr[g][k][5] = z.y * scale, qr[g][k][6] = z.z * scale, qr[g][k][7] = z.w * scale;
#pragma unroll
      for (int e = 0; e < 8; e++) acc[g][k][e] = 0.f;
    }
  }

  for (int tt = t0, cur = 0; tt < t1; tt += TILE, cur = cur + 1 == ATT_VEC_STAGES ? 0 : cur + 1) {
    const int n = min(TILE, t1 - tt);
    const __half *kb = kbuf(cur), *vb = kb + TILE * headDim;
    // The buffer before this one was last read before the previous tile's
    // closing barrier: the tile STAGES-1 ahead goes there.
    fetch(tt + (ATT_VEC_STAGES - 1) * TILE, cur == 0 ? ATT_VEC_STAGES - 1 : cur - 1);
    cp_async_wait_n<ATT_VEC_STAGES - 1>();
    __syncthreads();
    // Scores of this warp's rows j = 2i + half, i ≡ warp (mod 4): -inf past
    // the tile. A pair wholly past it is skipped by the whole warp (short
    // splits: at 8 positions a split each warp has one pair).
    float sc[NI][GM];
#pragma unroll
    for (int ii = 0; ii < NI; ii++) {
      const int j = 2 * (warp + ATT_VEC_WARPS * ii) + half;
      if (j - half >= n) {
#pragma unroll
        for (int g = 0; g < GM; g++) sc[ii][g] = -INFINITY;
        continue;
      }
      float d[GM];
#pragma unroll
      for (int g = 0; g < GM; g++) d[g] = 0.f;
#pragma unroll
      for (int k = 0; k < CPL; k++) {
        const int c = hl + 16 * k;
        if (j < n && c < ch) {
          const uint4 raw = *(const uint4 *)(kb + j * headDim + 8 * c);
          const __half2 *h2 = (const __half2 *)&raw;
#pragma unroll
          for (int e = 0; e < 4; e++) {
            const float2 kv = __half22float2(h2[e]);
#pragma unroll
            for (int g = 0; g < GM; g++) d[g] += qr[g][k][2 * e] * kv.x + qr[g][k][2 * e + 1] * kv.y;
          }
        }
      }
#pragma unroll
      for (int g = 0; g < GM; g++) {
#pragma unroll
        for (int off = 8; off > 0; off >>= 1) d[g] += __shfl_xor_sync(0xffffffffu, d[g], off);
        sc[ii][g] = j < n ? (cap > 0.f ? cap * tanhf(d[g] / cap) : d[g]) : -INFINITY;
      }
    }
    // The warp's online softmax over its rows of this tile, per head; the
    // two halves share the max, so their sums add at the end.
#pragma unroll
    for (int g = 0; g < GM; g++) {
      float mt = sc[0][g];
#pragma unroll
      for (int ii = 1; ii < NI; ii++) mt = fmaxf(mt, sc[ii][g]);
      mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 16));
      const float mNew = fmaxf(m[g], mt);
      if (mNew == -INFINITY) continue; // no row of this warp yet: nothing to weigh
      const float corr = m[g] == -INFINITY ? 0.f : __expf(m[g] - mNew);
      float sum = 0.f;
#pragma unroll
      for (int ii = 0; ii < NI; ii++) {
        sc[ii][g] = sc[ii][g] == -INFINITY ? 0.f : __expf(sc[ii][g] - mNew);
        sum += sc[ii][g];
      }
      sum += __shfl_xor_sync(0xffffffffu, sum, 16);
      l[g] = l[g] * corr + sum, m[g] = mNew;
#pragma unroll
      for (int k = 0; k < CPL; k++) {
#pragma unroll
        for (int e = 0; e < 8; e++) acc[g][k][e] *= corr;
      }
    }
    // Weights times this warp's V rows.
#pragma unroll
    for (int ii = 0; ii < NI; ii++) {
      const int j = 2 * (warp + ATT_VEC_WARPS * ii) + half;
      if (j - half >= n) continue;
#pragma unroll
      for (int k = 0; k < CPL; k++) {
        const int c = hl + 16 * k;
        if (j < n && c < ch) {
          const uint4 raw = *(const uint4 *)(vb + j * headDim + 8 * c);
          const __half2 *h2 = (const __half2 *)&raw;
#pragma unroll
          for (int e = 0; e < 4; e++) {
            const float2 vv = __half22float2(h2[e]);
#pragma unroll
            for (int g = 0; g < GM; g++) {
              acc[g][k][2 * e] += sc[ii][g] * vv.x;
              acc[g][k][2 * e + 1] += sc[ii][g] * vv.y;
            }
          }
        }
      }
    }
    __syncthreads();
  }

  // The halves' sums, then the warps' results merged through the (now
  // idle) tile buffers: per warp and head m, l and headDim sums.
  float *wm = (float *)att_smem;             // [warps][GM] maxima
  float *wl = wm + ATT_VEC_WARPS * GM;       // [warps][GM] sums of weights
  float *wa = wl + ATT_VEC_WARPS * GM;       // [warps][GM][headDim] weighted sums
#pragma unroll
  for (int g = 0; g < GM; g++) {
#pragma unroll
    for (int k = 0; k < CPL; k++) {
#pragma unroll
      for (int e = 0; e < 8; e++) acc[g][k][e] += __shfl_xor_sync(0xffffffffu, acc[g][k][e], 16);
    }
  }
  cp_async_wait(); // no copy may still land in the buffers
  __syncthreads();
#pragma unroll
  for (int g = 0; g < GM; g++) {
    if (lane == 0) wm[warp * GM + g] = m[g], wl[warp * GM + g] = l[g];
#pragma unroll
    for (int k = 0; k < CPL; k++) {
      const int c = hl + 16 * k;
      if (half == 0 && c < ch) {
        float4 *o = (float4 *)(wa + ((size_t)warp * GM + g) * headDim + 8 * c);
        o[0] = make_float4(acc[g][k][0], acc[g][k][1], acc[g][k][2], acc[g][k][3]);
        o[1] = make_float4(acc[g][k][4], acc[g][k][5], acc[g][k][6], acc[g][k][7]);
      }
    }
  }
  __syncthreads();
  for (int idx = tid; idx < G * (headDim + 2); idx += ATT_THREADS) {
    const int g = idx / (headDim + 2), d = idx - g * (headDim + 2);
    float M = -INFINITY;
#pragma unroll
    for (int w = 0; w < ATT_VEC_WARPS; w++) M = fmaxf(M, wm[w * GM + g]);
    float v = 0.f;
    if (d == headDim) {
      v = M;
    } else if (M != -INFINITY) {
#pragma unroll
      for (int w = 0; w < ATT_VEC_WARPS; w++) {
        const float mw = wm[w * GM + g];
        if (mw == -INFINITY) continue;
        const float f = __expf(mw - M);
        v += f * (d < headDim ? wa[((size_t)w * GM + g) * headDim + d] : wl[w * GM + g]);
      }
    }
    part[(((size_t)b * heads + (size_t)kvh * G + g) * splits + split) * (headDim + 2) + d] = v;
  }
  grid_launch();
}
