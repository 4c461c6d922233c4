package decode

import (
	"fmt"

	"llmserve/model"
)

// DefaultBlockSize is the number of tokens per block of a paged KV pool
// when the options leave it out.
const DefaultBlockSize = 32

// defaultCPUKVType is the CPU engine's cache type when the options leave
// it out.
const defaultCPUKVType = KVF16

// cpuKVLayout sizes the CPU engine's pool from opts, filling in the
// defaults of the cache types and block size.
func cpuKVLayout(m *model.Model, opts *CPUOptions) (KVLayout, error) {
	if opts.CacheTypeK == KVDefault {
		opts.CacheTypeK = defaultCPUKVType
	}
	if opts.CacheTypeV == KVDefault {
		opts.CacheTypeV = defaultCPUKVType
	}
	if opts.BlockSize <= 0 {
		opts.BlockSize = DefaultBlockSize
	}
	l := KVLayout{BlockSize: opts.BlockSize, Layers: len(m.Layers), Dim: m.KVHeads * m.HeadDim, K: opts.CacheTypeK, V: opts.CacheTypeV}
	if _, err := l.K.rowBytes(l.Dim); err != nil {
		return l, fmt.Errorf("%w (--cache-type-k)", err)
	}
	if _, err := l.V.rowBytes(l.Dim); err != nil {
		return l, fmt.Errorf("%w (--cache-type-v)", err)
	}
	perSeq := l.BlocksFor(opts.Context)
	l.Blocks = opts.MaxSeqs * perSeq
	if opts.KVMemory > 0 {
		perBlock := max(1, l.BytesPerToken()*int64(l.BlockSize))
		l.Blocks = int(min(opts.KVMemory/perBlock, int64(1)<<31-1))
		if l.Blocks < perSeq {
			return l, fmt.Errorf("decode: a KV memory budget of %d bytes holds %d tokens (%d bytes a token), less than one context of %d",
				opts.KVMemory, l.Blocks*l.BlockSize, l.BytesPerToken(), opts.Context)
		}
	}
	return l, nil
}

// fixedTables gives each of seqs slots its own blocks of a context of ctx
// positions, or nil when the pool does not have that many.
func fixedTables(l KVLayout, seqs, ctx int) [][]int32 {
	perSeq := l.BlocksFor(ctx)
	if seqs*perSeq > l.Blocks {
		return nil
	}
	t := make([][]int32, seqs)
	for s := range t {
		t[s] = make([]int32, perSeq)
		for i := range t[s] {
			t[s][i] = int32(s*perSeq + i)
		}
	}
	return t
}

// table is the block table of sequence seq in b.
func (e *CPUEngine) table(b *Batch, seq int32) []int32 {
	if b.Blocks == nil {
		return e.fixed[seq]
	}
	return b.Blocks[seq]
}

// checkTables makes sure every token of b has a cell: a block table that
// covers its position and names blocks of the pool.
func (e *CPUEngine) checkTables(b *Batch) error {
	l := e.kv.Layout
	if b.Blocks == nil && e.fixed == nil {
		return fmt.Errorf("decode: the KV pool of %d blocks is smaller than %d fixed slots; the batch needs block tables", l.Blocks, e.opts.MaxSeqs)
	}
	if b.Blocks != nil && len(b.Blocks) < e.opts.MaxSeqs {
		return fmt.Errorf("decode: %d block tables for %d slots", len(b.Blocks), e.opts.MaxSeqs)
	}
	for i := range b.Tokens {
		if err := checkTable(e.table(b, b.Seq[i]), l.BlockSize, l.Blocks, int(b.Pos[i])); err != nil {
			return fmt.Errorf("sequence %d: %w", b.Seq[i], err)
		}
	}
	return nil
}

// storeKV writes the chunk's K and V rows into block layer's cells.
func (e *CPUEngine) storeKV(layer, n int, b *Batch) {
	k, v, kvDim := e.s.bufs[model.BufK], e.s.bufs[model.BufV], e.kvDim
	kc, vc := &e.kv.k[layer], &e.kv.v[layer]
	for i := 0; i < n; i++ {
		at := e.kv.cell(e.table(b, b.Seq[i]), int(b.Pos[i]))
		kc.store(at, k[i*kvDim:(i+1)*kvDim])
		vc.store(at, v[i*kvDim:(i+1)*kvDim])
	}
}
