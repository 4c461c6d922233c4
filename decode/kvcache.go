package decode

import (
	"encoding/binary"
	"fmt"

	"llmserve/gguf"
	"llmserve/kernels"
)

// KVLayout describes a paged KV cache: Blocks blocks of BlockSize token
// cells each, in every layer, for K and V. A sequence reaches its cells
// through a block table: position p lives in cell p%BlockSize of block
// table[p/BlockSize] (cellOf). The layout is what an engine reports to the
// scheduler (PagedEngine) and what the step's block tables index.
type KVLayout struct {
	BlockSize int    // tokens per block
	Blocks    int    // blocks in the pool
	Layers    int    // transformer blocks with a cache
	Dim       int    // values per token and layer (KV heads × head dim)
	K, V      KVType // element types of the keys and the values
}

// BytesPerToken is the cache memory one token takes over all layers.
func (l KVLayout) BytesPerToken() int64 {
	k, _ := l.K.rowBytes(l.Dim)
	v, _ := l.V.rowBytes(l.Dim)
	return int64(l.Layers) * int64(k+v)
}

// PoolBytes is the memory of the whole pool.
func (l KVLayout) PoolBytes() int64 {
	return l.BytesPerToken() * int64(l.Blocks) * int64(l.BlockSize)
}

// Tokens is the number of token cells in the pool.
func (l KVLayout) Tokens() int { return l.Blocks * l.BlockSize }

// BlocksFor is the number of blocks that hold n positions.
func (l KVLayout) BlocksFor(n int) int { return (n + l.BlockSize - 1) / l.BlockSize }

// cellOf is the one addressing function of the paged cache: the cell that
// holds position pos of the sequence whose block table is table. The
// caller has checked that table covers pos.
func cellOf(table []int32, blockSize, pos int) int {
	return int(table[pos/blockSize])*blockSize + pos%blockSize
}

// blockRun is the length of the run of positions from pos that lie in one
// block, at most n: cells cellOf(pos) .. cellOf(pos)+run-1 are consecutive.
func blockRun(blockSize, pos, n int) int {
	return min(n, blockSize-pos%blockSize)
}

// checkTable reports whether table covers positions 0..pos and names only
// blocks of a pool of blocks.
func checkTable(table []int32, blockSize, blocks, pos int) error {
	if pos/blockSize >= len(table) {
		return fmt.Errorf("decode: block table of %d blocks of %d tokens does not reach position %d", len(table), blockSize, pos)
	}
	for _, b := range table[:pos/blockSize+1] {
		if b < 0 || int(b) >= blocks {
			return fmt.Errorf("decode: block %d is outside the pool of %d blocks", b, blocks)
		}
	}
	return nil
}

// kvCells is one layer's K or V cells in one element type.
type kvCells struct {
	typ      KVType
	dim      int       // values per cell
	rowBytes int       // bytes per cell (f16 and q8_0)
	f32      []float32 // [cells*dim] when typ is KVF32
	f16      []uint16  // [cells*dim] halves when typ is KVF16
	q8       []byte    // [cells*rowBytes] q8_0 blocks when typ is KVQ8_0
}

func newKVCells(typ KVType, dim, cells int) (kvCells, error) {
	rb, err := typ.rowBytes(dim)
	if err != nil {
		return kvCells{}, err
	}
	c := kvCells{typ: typ, dim: dim, rowBytes: rb}
	switch typ {
	case KVF32:
		c.f32 = make([]float32, cells*dim)
	case KVF16:
		c.f16 = make([]uint16, cells*dim)
	case KVQ8_0:
		c.q8 = make([]byte, cells*rb)
	}
	return c, nil
}

// store writes one token's row x (dim values) into cell.
func (c *kvCells) store(cell int, x []float32) {
	switch c.typ {
	case KVF32:
		copy(c.f32[cell*c.dim:(cell+1)*c.dim], x)
	case KVF16:
		dst := c.f16[cell*c.dim : (cell+1)*c.dim]
		for i, v := range x[:c.dim] {
			dst[i] = gguf.FP32ToFP16(v)
		}
	case KVQ8_0:
		// The row width was checked at construction, so Quantize cannot fail.
		_ = gguf.Quantize(gguf.TypeQ8_0, x[:c.dim], c.q8[cell*c.rowBytes:(cell+1)*c.rowBytes])
	}
}

// rows returns values lo..hi-1 of the n consecutive f32 cells from cell,
// in place, dim values apart.
func (c *kvCells) rows(cell, n, lo, hi int) []float32 {
	return c.f32[cell*c.dim+lo : (cell+n-1)*c.dim+hi]
}

// widen writes values lo..hi-1 of the n consecutive cells from cell, of
// any type, as float32 rows of hi-lo values into dst.
func (c *kvCells) widen(cell, n, lo, hi int, dst []float32) {
	w := hi - lo
	for r := 0; r < n; r++ {
		out := dst[r*w : (r+1)*w]
		switch c.typ {
		case KVF32:
			copy(out, c.f32[(cell+r)*c.dim+lo:(cell+r)*c.dim+hi])
		case KVF16:
			kernels.WidenF16(out, c.f16[(cell+r)*c.dim+lo:(cell+r)*c.dim+hi])
		case KVQ8_0:
			row := c.q8[(cell+r)*c.rowBytes : (cell+r+1)*c.rowBytes]
			if lo%q8Block == 0 && hi%q8Block == 0 { // whole blocks: heads of 32k values
				kernels.WidenQ8_0(out, row[lo/q8Block*q8BlockBytes:hi/q8Block*q8BlockBytes])
			} else {
				widenQ8Range(out, row, lo)
			}
		}
	}
}

// widenQ8Range widens values lo..lo+len(dst)-1 of a q8_0 row that do not
// span whole blocks (heads narrower than a block).
func widenQ8Range(dst []float32, row []byte, lo int) {
	for i := 0; i < len(dst); {
		j := lo + i
		blk := row[j/q8Block*q8BlockBytes:]
		d := gguf.FP16ToFP32(binary.LittleEndian.Uint16(blk))
		for ; i < len(dst) && (lo+i)/q8Block == j/q8Block; i++ {
			dst[i] = float32(int8(blk[2+(lo+i)%q8Block])) * d
		}
	}
}

// KVCache is a paged pool of K and V cells for every layer.
type KVCache struct {
	Layout KVLayout
	k, v   []kvCells // [Layers] cells of each layer
}

// NewKVCache allocates the pool layout describes.
func NewKVCache(layout KVLayout) (*KVCache, error) {
	if layout.BlockSize <= 0 || layout.Blocks <= 0 || layout.Dim <= 0 || layout.Layers < 0 {
		return nil, fmt.Errorf("decode: KV pool of %d blocks of %d tokens, %d values a token", layout.Blocks, layout.BlockSize, layout.Dim)
	}
	c := &KVCache{Layout: layout, k: make([]kvCells, layout.Layers), v: make([]kvCells, layout.Layers)}
	cells := layout.Tokens()
	for l := range c.k {
		var err error
		if c.k[l], err = newKVCells(layout.K, layout.Dim, cells); err != nil {
			return nil, err
		}
		if c.v[l], err = newKVCells(layout.V, layout.Dim, cells); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// cell is the cell of position pos of the sequence with block table table.
func (c *KVCache) cell(table []int32, pos int) int { return cellOf(table, c.Layout.BlockSize, pos) }
