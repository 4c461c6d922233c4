// kv.cuh: the one addressing function of the paged KV pool on the device.
// Every kernel that reads or writes a paged cache reaches a token's row
// through kv_cell, and nothing else computes a cache address.
//
// The pool holds Blocks blocks of blockSize token cells, for K and for V
// and per layer: [blocks][blockSize][kvHeads*headDim] elements of one type
// (f32 or f16 now). A sequence slot s owns row s of the block table,
// tables[s*tableCols .. s*tableCols+tableCols) int32 block ids (a row is
// filled up to the blocks its positions reach; the rest is never read).
// Position p of slot s lives in cell p%blockSize of block
// tables[s*tableCols + p/blockSize], as decode's cellOf says on the CPU
// and kernels.KVPoolLayout.CellOffset in Go. A q8_0 pool fits the same
// function: its rows are bytes (kv_at<unsigned char> with the row's
// byte size).
#pragma once

// KVPool is the block table and the shape of a paged pool, as kernels
// receive them (each field a launch parameter of its own).
struct KVPool {
  const int *tables; // [maxSeqs][tableCols] block ids
  int tableCols;     // blocks one table row holds: the longest context / blockSize, rounded up
  int blockSize;     // token cells per block
  int blocks;        // blocks in the pool
  int maxSeqs;       // table rows
};

// kv_pool builds a KVPool from a kernel's parameters.
static __device__ __forceinline__ KVPool kv_pool(const int *tables, int tableCols, int blockSize, int blocks,
                                                 int maxSeqs) {
  KVPool p;
  p.tables = tables, p.tableCols = tableCols, p.blockSize = blockSize, p.blocks = blocks, p.maxSeqs = maxSeqs;
  return p;
}

// kv_ctx is the longest context a table row reaches.
static __device__ __forceinline__ int kv_ctx(const KVPool &pool) { return pool.tableCols * pool.blockSize; }

// kv_cell is the cell of position pos of sequence slot seq, or -1 where
// that is outside the pool: a slot outside the table, a position outside
// the row, a block id outside the pool (a table row is filled only as far
// as its sequence reaches, so a stray position reads no other sequence's
// cells unless the table names them).
static __device__ __forceinline__ long long kv_cell(const KVPool &pool, int seq, int pos) {
  if (seq < 0 || seq >= pool.maxSeqs || pos < 0 || pos >= kv_ctx(pool)) return -1;
  const int blk = pool.tables[(size_t)seq * pool.tableCols + pos / pool.blockSize];
  if (blk < 0 || blk >= pool.blocks) return -1;
  return (long long)blk * pool.blockSize + pos % pool.blockSize;
}

// kv_at is the first element of cell's row in a pool of rows of `row`
// elements of type T (kvHeads*headDim values; bytes for q8_0).
template <typename T> static __device__ __forceinline__ T *kv_at(T *base, long long cell, int row) {
  return base + (size_t)cell * (size_t)row;
}

// KVPaged and KVFlat are the two cache addressings a kernel templated on
// its cache takes: cell(seq, pos) is the cell of a position (-1 outside
// the cache) and covers(seq, pos0, rows) whether positions pos0 ..
// pos0+rows-1 of slot seq lie inside it. KVPaged is the paged pool
// (kv_cell); KVFlat the per-slot cache of attention.cu, [maxSeqs][ctx]
// cells, cell seq·ctx + pos.
struct KVPaged {
  KVPool pool;
  __device__ __forceinline__ long long cell(int seq, int pos) const { return kv_cell(pool, seq, pos); }
  __device__ __forceinline__ bool covers(int seq, int pos0, int rows) const {
    return seq >= 0 && seq < pool.maxSeqs && pos0 >= 0 && pos0 <= kv_ctx(pool) - rows;
  }
};

struct KVFlat {
  int ctx, maxSeqs;
  __device__ __forceinline__ long long cell(int seq, int pos) const {
    if (seq < 0 || seq >= maxSeqs || pos < 0 || pos >= ctx) return -1;
    return (long long)seq * ctx + pos;
  }
  __device__ __forceinline__ bool covers(int seq, int pos0, int rows) const {
    return seq >= 0 && seq < maxSeqs && pos0 >= 0 && pos0 <= ctx - rows;
  }
};
