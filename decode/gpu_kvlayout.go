package decode

import (
	"fmt"

	"llmserve/kernels"
	"llmserve/model"
)

// gpuKVLayout sizes the GPU engine's paged f16 pool as cpuKVLayout sizes
// the CPU's: blockSize tokens a block (0: DefaultBlockSize), room for
// maxSeqs contexts of ctx positions, or as many blocks as kvMemory bytes
// hold (at least one context). Keys and values are f16 (the only cell
// type of the device pool so far).
func gpuKVLayout(m *model.Model, ctx, maxSeqs, blockSize int, kvMemory int64) (KVLayout, error) {
	if blockSize <= 0 {
		blockSize = DefaultBlockSize
	}
	l := KVLayout{BlockSize: blockSize, Layers: len(m.Layers), Dim: m.KVHeads * m.HeadDim, K: KVF16, V: KVF16}
	if m.HeadDim%8 != 0 {
		return l, fmt.Errorf("decode: a paged f16 KV pool on the GPU needs heads of a multiple of 8 values, the model's are %d: %w", m.HeadDim, model.ErrUnsupported)
	}
	perSeq := l.BlocksFor(ctx)
	blocks := int64(maxSeqs) * int64(perSeq)
	if kvMemory > 0 {
		blocks = kvMemory / max(1, l.BytesPerToken()*int64(blockSize))
		if blocks < int64(perSeq) {
			return l, fmt.Errorf("decode: a KV memory budget of %d bytes holds %d tokens (%d bytes a token), less than one context of %d",
				kvMemory, blocks*int64(blockSize), l.BytesPerToken(), ctx)
		}
	}
	if blocks*int64(blockSize) > 1<<31-1 {
		return l, fmt.Errorf("decode: a KV pool of %d blocks of %d tokens: too many cells", blocks, blockSize)
	}
	l.Blocks = int(blocks)
	return l, nil
}

// devicePoolLayout is the device form of one layer's half of the pool:
// block tables of maxSeqs rows of BlocksFor(ctx) ids.
func devicePoolLayout(l KVLayout, m *model.Model, ctx, maxSeqs int) kernels.KVPoolLayout {
	return kernels.KVPoolLayout{MaxSeqs: maxSeqs, TableCols: l.BlocksFor(ctx), BlockSize: l.BlockSize, Blocks: l.Blocks,
		KVHeads: m.KVHeads, HeadDim: m.HeadDim, Elem: kernels.KVPoolF16}
}

// fillDeviceTables writes the block tables of b, or fixed where b has
// none, as the device reads them: dst holds maxSeqs rows of cols ids, a
// row's entries past its table -1. It checks, as the CPU engine does,
// that every token's table covers its position and names blocks of the
// pool.
func fillDeviceTables(dst []int32, cols int, l KVLayout, b *Batch, fixed [][]int32, maxSeqs int) error {
	tables := b.Blocks
	if tables == nil {
		if fixed == nil {
			return fmt.Errorf("decode: the KV pool of %d blocks is smaller than %d fixed slots; the batch needs block tables", l.Blocks, maxSeqs)
		}
		tables = fixed
	}
	if len(tables) < maxSeqs {
		return fmt.Errorf("decode: %d block tables for %d slots", len(tables), maxSeqs)
	}
	for i := range b.Tokens {
		if err := checkTable(tables[b.Seq[i]], l.BlockSize, l.Blocks, int(b.Pos[i])); err != nil {
			return fmt.Errorf("sequence %d: %w", b.Seq[i], err)
		}
	}
	for s := 0; s < maxSeqs; s++ {
		row := dst[s*cols : (s+1)*cols]
		n := copy(row, tables[s])
		for i := n; i < cols; i++ {
			row[i] = -1
		}
	}
	return nil
}

// poolShare is the KV pool budget of share (0 < share ≤ 1) of the free
// device memory after the weights, less the step buffers (bufBytes) that
// are allocated after the pool.
func poolShare(free, bufBytes int64, share float64) (int64, error) {
	if !(share > 0 && share <= 1) {
		return 0, fmt.Errorf("decode: a KV pool share of %v: want more than 0 and at most 1", share)
	}
	avail := free - bufBytes
	if avail <= 0 {
		return 0, fmt.Errorf("decode: %d bytes free after the weights, %d needed by the step buffers: no room for a KV pool", free, bufBytes)
	}
	return int64(share * float64(avail)), nil
}
