package kernels

import (
	"fmt"
	"strconv"
)

// KVPoolElem is the element type of a device KV pool's cells.
type KVPoolElem int

const (
	KVPoolF32 KVPoolElem = iota // 4 bytes a value
	KVPoolF16                   // IEEE half, 2 bytes a value
)

// Size is the bytes of one value.
func (e KVPoolElem) Size() int {
	if e == KVPoolF16 {
		return 2
	}
	return 4
}

// KVPoolLayout is the shape of a paged KV pool on the device, one layer's
// K or V half: Blocks blocks of BlockSize token cells of KVHeads·HeadDim
// values each, and a block table of MaxSeqs rows of TableCols int32 block
// ids, row s for sequence slot s. It mirrors kv.cuh's KVPool: CellOffset
// is kv_cell in Go, the reference the layout tests compare the device
// against.
type KVPoolLayout struct {
	MaxSeqs   int // table rows (sequence slots)
	TableCols int // block ids per table row
	BlockSize int // token cells per block
	Blocks    int // blocks in the pool
	KVHeads   int
	HeadDim   int
	Elem      KVPoolElem
}

// KVDim is the values of one cell.
func (l KVPoolLayout) KVDim() int { return l.KVHeads * l.HeadDim }

// Ctx is the longest context a table row reaches.
func (l KVPoolLayout) Ctx() int { return l.TableCols * l.BlockSize }

// Cells is the token cells in the pool.
func (l KVPoolLayout) Cells() int { return l.Blocks * l.BlockSize }

// Bytes is the size of the K (or V) half of one layer.
func (l KVPoolLayout) Bytes() int64 {
	return int64(l.Cells()) * int64(l.KVDim()) * int64(l.Elem.Size())
}

// TableLen is the int32 entries of the block table.
func (l KVPoolLayout) TableLen() int { return l.MaxSeqs * l.TableCols }

// CellOffset is kv_cell of kv.cuh: the cell of position pos of sequence
// slot seq under the block table tables ([MaxSeqs][TableCols]), or -1
// where the slot, the position or the block id it names lies outside
// the pool. The cell's first value is CellOffset·KVDim elements into
// the pool.
func (l KVPoolLayout) CellOffset(tables []int32, seq, pos int) int64 {
	if seq < 0 || seq >= l.MaxSeqs || pos < 0 || pos >= l.Ctx() || l.BlockSize < 1 {
		return -1
	}
	i := seq*l.TableCols + pos/l.BlockSize
	if i >= len(tables) {
		return -1
	}
	b := tables[i]
	if b < 0 || int(b) >= l.Blocks {
		return -1
	}
	return int64(b)*int64(l.BlockSize) + int64(pos%l.BlockSize)
}

// check reports whether the layout is one the paged kernels take: heads
// of a multiple of 8 values (a 16-byte row chunk of f16) up to MaxHeadDim.
func (l KVPoolLayout) check(op string) error {
	if l.MaxSeqs < 1 || l.TableCols < 1 || l.BlockSize < 1 || l.Blocks < 1 || l.KVHeads < 1 ||
		l.HeadDim < 8 || l.HeadDim%8 != 0 || l.HeadDim > maxHeadDimPaged || l.Elem != KVPoolF16 {
		return fmt.Errorf("kernels: %s: pool of %d blocks of %d cells, table %d×%d, %d heads of %d, %d-byte values (want f16, heads a multiple of 8 up to %d)",
			op, l.Blocks, l.BlockSize, l.MaxSeqs, l.TableCols, l.KVHeads, l.HeadDim, l.Elem.Size(), maxHeadDimPaged)
	}
	if int64(l.Cells())*int64(l.KVDim()) >= 1<<40 || int64(l.MaxSeqs)*int64(l.TableCols) >= 1<<31 {
		return fmt.Errorf("kernels: %s: pool of %d cells of %d values, table of %d×%d entries: too large", op, l.Cells(), l.KVDim(), l.MaxSeqs, l.TableCols)
	}
	return nil
}

// pagedSplits is attentionSplits (attention_cuda.go) for a pool: about 16
// positions per range up to 64 ranges of the longest context a table row
// reaches, so a captured graph stays valid as sequences grow.
func pagedSplits(p KVPoolLayout) int { return min(max(p.Ctx()/16, 1), 64) }

// AttentionPagedScratch is the floats of scratch AttentionPaged needs for
// rows tokens of heads heads.
func AttentionPagedScratch(p KVPoolLayout, rows, heads int) int {
	return rows * heads * pagedSplits(p) * (p.HeadDim + 2)
}

// attentionPagedShared is the dynamic shared memory of attention_part_pf16
// with tiles of tile positions: two buffers of a tile's f16 K rows (padded
// by 8 values) and V rows, the group's f32 queries and a tile of f32
// scores per query head.
func attentionPagedShared(tile, headDim, group int) int {
	return 2*2*(tile*(headDim+8)+tile*headDim) + 4*(group*headDim+group*tile)
}

// attentionPagedTile is attentionTile for attention_part_pf16.
func attentionPagedTile(headDim, group int) int {
	tile := 32
	for tile > 1 && attentionPagedShared(tile, headDim, group) > 48*1024-256 {
		tile /= 2
	}
	return tile
}

// attentionVec is an instance of attention_vec_pf16 (attention_vec.cuh):
// groups of up to Group query heads per KV head, heads of up to 128·Chunks
// values.
type attentionVec struct{ Group, Chunks int }

// attentionVecInstances are the instances attention_paged.cu compiles: the
// queries and sums of Group·Chunks·8 values a lane stay in registers up to
// 8·8 of each (242 registers at 8×1, no spills on sm_90).
var attentionVecInstances = []attentionVec{{1, 1}, {2, 1}, {4, 1}, {8, 1}, {1, 2}, {2, 2}, {4, 2}}

func (v attentionVec) name() string {
	return "attention_vec_pf16_" + strconv.Itoa(v.Group) + "x" + strconv.Itoa(v.Chunks)
}

// tile is ATT_VEC_TILE: the positions per tile.
func (v attentionVec) tile() int { return 32 / v.Chunks }

// shared is the dynamic shared memory of the instance for heads of
// headDim values: ATT_VEC_STAGES (2) buffers of a tile's f16 K and V rows,
// which the warps' merge (per warp and head: max, sum, headDim weighted
// sums in f32) reuses. At most 32 KiB: no opt-in.
func (v attentionVec) shared(headDim int) int {
	return max(2*2*2*v.tile()*headDim, 4*(4*v.Group*(headDim+2)))
}

// attentionVecFor is the smallest instance for groups of group query heads
// and heads of headDim values, if one is compiled.
func attentionVecFor(group, headDim int) (attentionVec, bool) {
	for _, v := range attentionVecInstances {
		if group <= v.Group && headDim <= 128*v.Chunks {
			return v, true
		}
	}
	return attentionVec{}, false
}

// attVecMinDefault is the fewest positions a split of attention_vec_pf16's
// _used twins takes by default: ATT_VEC_MIN (attention_vec.cuh), so that
// they give the bits of the kernels that write every split.
const attVecMinDefault = 32

// attVecMinFrom reads LLMSERVE_ATTENTION_VEC_MIN. By default (unset or not
// a number of 8 to 4096) attention_vec_pf16 runs as its _used twins with
// splits of at least attVecMinDefault positions: the blocks of the splits
// a token does not use (and of tokens outside the cache) write nothing and
// attention_merge_used reads only the rest. A number of 8 to 4096 sets
// that minimum; 0 keeps the kernels that write every split and merge them
// all (ATT_VEC_MIN), for measuring against the default.
func attVecMinFrom(v string) int {
	if v == "0" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 8 && n <= 4096 {
		return n
	}
	return attVecMinDefault
}

// maxHeadDimPaged is MaxHeadDim, untagged: the largest head the paged
// kernels take.
const maxHeadDimPaged = 256
