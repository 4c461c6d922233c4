//go:build cuda

package decode

import (
	"fmt"

	"llmserve/internal/cuda"
	"llmserve/kernels"
	"llmserve/model"
)

// gpuPaged is the GPU engine's paged f16 KV pool (GPUOptions.Paged): every
// layer's K and V cells in blocks (kv.cuh), reached through one set of
// block tables, [MaxSeqs][TableCols] int32, that every step uploads
// beside its inputs into a fixed buffer, so a captured graph reads the
// current tables on every replay. The scheduler's paged mode (a
// PagedGPUEngine) draws the tables; a batch without tables uses fixed,
// one run of blocks per slot, as the CPU engine does.
type gpuPaged struct {
	layout KVLayout
	pools  []kernels.DevKVPool // [layer]
	tables *cuda.Buffer        // the device tables, [MaxSeqs][TableCols] int32
	host   []int32             // [MaxSeqs*TableCols] staging of tables
	fixed  [][]int32           // [MaxSeqs][BlocksFor(Context)] each slot's own blocks; nil when the pool is smaller
}

// pagedLayout sizes the pool of opts (GPUOptions.Paged).
func pagedLayout(m *model.Model, opts GPUOptions) (KVLayout, kernels.KVPoolLayout, error) {
	l, err := gpuKVLayout(m, opts.Context, opts.MaxSeqs, opts.BlockSize, opts.KVMemory)
	if err != nil {
		return l, kernels.KVPoolLayout{}, err
	}
	return l, devicePoolLayout(l, m, opts.Context, opts.MaxSeqs), nil
}

// pagedBytes is the device memory of the pool and its tables.
func pagedBytes(l KVLayout, d kernels.KVPoolLayout) (int64, error) {
	return sizeSum("KV pool", l.PoolBytes(), int64(d.TableLen())*4)
}

// initPaged allocates the pool and its tables.
func (e *GPUEngine) initPaged() error {
	m := e.m
	l, d, err := pagedLayout(m, e.opts)
	if err != nil {
		return err
	}
	p := &gpuPaged{layout: l, host: make([]int32, d.TableLen()), fixed: fixedTables(l, e.opts.MaxSeqs, e.opts.Context)}
	if p.tables, err = e.alloc("KV block tables", int64(d.TableLen())*4); err != nil {
		return err
	}
	for i := range m.Layers {
		kb, err := e.alloc(fmt.Sprintf("blk.%d.pool_k", i), d.Bytes())
		if err != nil {
			return err
		}
		vb, err := e.alloc(fmt.Sprintf("blk.%d.pool_v", i), d.Bytes())
		if err != nil {
			return err
		}
		p.pools = append(p.pools, kernels.DevKVPool{KVPoolLayout: d, K: kb.Ptr(), V: vb.Ptr(), Tables: p.tables.Ptr()})
	}
	e.paged = p
	if e.opts.Info != nil {
		e.opts.Info(fmt.Sprintf("KV pool: %d blocks of %d tokens, f16, %d bytes a token, %s", l.Blocks, l.BlockSize, l.BytesPerToken(), gib(l.PoolBytes())))
	}
	return nil
}

// writeTables queues the upload of b's block tables (fixed ones where b
// has none), after checking that each token's table covers its position.
func (e *GPUEngine) writeTables(b *Batch) error {
	p := e.paged
	d := p.pools[0].KVPoolLayout
	if err := fillDeviceTables(p.host, d.TableCols, p.layout, b, p.fixed, e.opts.MaxSeqs); err != nil {
		return err
	}
	return p.tables.Write(0, cuda.AsBytes(p.host))
}

// ropeStore queues block l's rotation and cache write of the step's q, k
// and v: into the pool when paged, else the f32 cache.
func (e *GPUEngine) ropeStore(l int, q, k, v kernels.DevF32) error {
	if e.paged == nil {
		return e.dev.RopeStore(e.rope[l].StoreOp(q, k, v))
	}
	w := &e.w.layers[l]
	return e.dev.RopeStorePaged(kernels.RopeStorePagedOp{Pool: e.paged.pools[l], Q: q, K: k, V: v,
		QNorm: w.vecs[model.AttnQNorm], KNorm: w.vecs[model.AttnKNorm], Eps: e.m.RMSEps,
		Pos: kernels.DevI32{Ptr: e.s.pos.Ptr, Len: q.Rows}, Seq: kernels.DevI32{Ptr: e.s.seq.Ptr, Len: q.Rows}, Rope: e.ropeParams(e.m.RopeNeox())})
}

// epilogue is the rotation and cache write of block l's Q/K/V product
// (into the pool when paged, else the f32 cache), fused into the product's
// launch where its kernels allow, else run right after it.
func (e *GPUEngine) epilogue(l int) *kernels.RopeEpilogue {
	if l >= len(e.rope) {
		return nil
	}
	return e.rope[l]
}

// attentionPaged is attention over the pool.
func (e *GPUEngine) attentionPaged(l, B int) error {
	s, p := &e.s, e.paged.pools[l]
	if wide(B) && e.prefill {
		return e.dev.AttentionPrefillPaged(kernels.AttentionPrefillPagedOp{Pool: p, Q: s.q.Slice(0, B), Out: s.att.Slice(0, B), Heads: e.m.Heads,
			Tiles: s.tiles, NumTiles: e.tiles, MaxRows: e.tileRows})
	}
	for lo := 0; lo < B; lo += gpuMaxBatch {
		n := min(gpuMaxBatch, B-lo)
		pos := kernels.DevI32{Ptr: s.pos.Ptr.Add(4 * int64(lo)), Len: n}
		seq := kernels.DevI32{Ptr: s.seq.Ptr.Add(4 * int64(lo)), Len: n}
		if err := e.dev.AttentionPaged(p, s.q.Slice(lo, lo+n), s.att.Slice(lo, lo+n), e.m.Heads, pos, seq, s.attPart); err != nil {
			return err
		}
	}
	return nil
}

// attentionScratch is the floats of attention partials for rows tokens:
// enough for the f32 cache's splits and the pool's.
func attentionScratch(m *model.Model, opts GPUOptions, rows int) int {
	c := kernels.DevKVCache{MaxSeqs: opts.MaxSeqs, Ctx: opts.Context, KVHeads: m.KVHeads, HeadDim: m.HeadDim}
	n := kernels.AttentionScratch(c, rows, m.Heads)
	if opts.Paged {
		if _, d, err := pagedLayout(m, opts); err == nil {
			n = max(n, kernels.AttentionPagedScratch(d, rows, m.Heads))
		}
	}
	return n
}

// PagedGPUEngine is a GPUEngine on a paged f16 KV pool (GPUOptions.Paged):
// a PagedEngine, so the scheduler's paged mode (prefix cache, preemption)
// drives it.
type PagedGPUEngine struct {
	*GPUEngine
}

// NewPagedGPUEngine opens a GPUEngine with opts.Paged set.
func NewPagedGPUEngine(m *model.Model, opts GPUOptions) (*PagedGPUEngine, error) {
	opts.Paged = true
	e, err := NewGPUEngine(m, opts)
	if err != nil {
		return nil, err
	}
	return &PagedGPUEngine{e}, nil
}

// KVLayout describes the pool the block tables index (PagedEngine).
func (e *PagedGPUEngine) KVLayout() KVLayout { return e.paged.layout }

var _ PagedEngine = (*PagedGPUEngine)(nil)
var _ MaskPicker = (*PagedGPUEngine)(nil)
