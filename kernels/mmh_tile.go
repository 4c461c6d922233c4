package kernels

import "fmt"

// The tiles of the 16-bit tensor-core products (mmh.cu): what each block
// computes, the shared memory it stages and which tile a product runs in.
// Untagged, so that the CPU model of the tile mapping (mmh_tile_test.go)
// tests the same figures the launches use.

// The default k staging of mmh.cu: MMH_BK values per stage, MMH_STAGES
// stages in flight; staged rows are padded by MMH_PAD 16-bit values (16
// bytes) in every staging.
const (
	mmhBK     = 32
	mmhStages = 4
	mmhPad    = 8
)

// mmhTile is the tile of Y one block of mmh_<type>_<tile> computes, rows
// weight rows by batch activation rows, the warp tile (warpRows ×
// warpBatch) each of its warps computes, and its k staging: bk values a
// stage, stages stages in flight; pipe runs it on mmh_pipe (the next k
// step's fragments read during this one's products, the copies spread over
// a stage), which takes matrices of fewer than 2³² values (mmh only).
//
// wg runs it on mmw.cu's wgmma instead (Hopper, compute capability 9.0
// only): two warpgroups, each warpRows (64) weight rows by warpBatch (the
// whole batch tile), bk 64, unpadded 128-byte swizzled rows.
type mmhTile struct {
	rows, batch, warpRows, warpBatch, bk, stages int
	pipe, wg                                     bool
}

// mmhTiles are the tiles compiled per type (MMH_KERNELS in mmh.cu; the wg
// ones MMW_KERNELS in mmw.cu): the ones mmhTileFor picks from, largest
// first, then others compiled to be measured (BenchmarkGPUMatMulHalf) and
// not picked by it (Device.halfTileFor picks mmwPicked's wg tiles on
// Hopper). At a 512-token prompt
// (H100, BF16, TFLOP/s) the first beat or matched every other tile on the
// Llama-3.1-8B shapes: 4096×4096 236 (the old pick, 128×64, 166), 14336×4096
// 260 (best 128×256 k64s3 268), 4096×14336 267 (old 176, others ≤ 213),
// 6144×4096 219 (best 256×128 k64s3 229).
var mmhTiles = []mmhTile{
	{128, 128, 64, 64, 64, 3, false, false}, {128, 64, 64, 32, mmhBK, mmhStages, false, false}, {64, 64, 32, 32, mmhBK, mmhStages, false, false},
	{128, 128, 64, 32, mmhBK, mmhStages, false, false}, {128, 128, 64, 64, mmhBK, mmhStages, false, false},
	{128, 256, 64, 64, mmhBK, mmhStages, false, false}, {256, 128, 64, 64, mmhBK, mmhStages, false, false}, {64, 64, 32, 32, 64, 4, false, false},
	{128, 128, 64, 32, 64, 3, false, false}, {128, 256, 64, 64, 64, 3, false, false}, {256, 128, 64, 64, 64, 3, false, false},
	{128, 256, 64, 64, 64, 4, false, false},
	{128, 128, 64, 64, 64, 3, true, false}, {128, 128, 64, 64, 32, 4, true, false}, {128, 256, 64, 64, 64, 3, true, false},
	{256, 128, 64, 64, 64, 3, true, false}, {128, 256, 64, 64, 32, 4, true, false},
	{128, 64, 64, 64, 64, 4, false, true}, {128, 64, 64, 64, 64, 3, false, true}, {128, 128, 64, 128, 64, 4, false, true},
	{128, 128, 64, 128, 64, 3, false, true}, {128, 256, 64, 256, 64, 3, false, true},
}

// mmhPicked is how many of mmhTiles, from the first, mmhTileFor picks
// from.
const mmhPicked = 3

// String is the tile as the kernels name it: <rows>x<batch>_<warp tile>,
// then _k<bk>s<stages> for a staging other than the default.
func (t mmhTile) String() string {
	s := fmt.Sprintf("%dx%d_%dx%d", t.rows, t.batch, t.warpRows, t.warpBatch)
	if t.bk != mmhBK || t.stages != mmhStages || t.pipe || t.wg {
		s += fmt.Sprintf("_k%ds%d", t.bk, t.stages)
	}
	if t.pipe {
		s += "p"
	}
	if t.wg {
		s += "w"
	}
	return s
}

// lds is the shared-memory row stride of a stage in 16-bit values (wg:
// unpadded).
func (t mmhTile) lds() int {
	if t.wg {
		return t.bk
	}
	return t.bk + mmhPad
}

// gluOK says whether a GLU launch (MmhParams.glu) runs in t: its
// warp rows split into a gate and an up half, each of its copy indices
// stays in one half, and the up warps' accumulators fit in the stages'
// shared memory.
func (t mmhTile) gluOK() bool {
	if t.wg { // warpgroup 0 gate, 1 up; BN/2 floats a thread of up in the ring
		return t.rows == 128 && t.batch*256 <= t.shared()
	}
	return (t.rows/t.warpRows)%2 == 0 && (t.rows/2)%(t.threads()/(t.bk/8)) == 0 && 2*t.rows*t.batch <= t.shared()
}

// warps is the block's warps: one per warp tile (wg: four, a warpgroup).
func (t mmhTile) warps() int {
	n := (t.rows / t.warpRows) * (t.batch / t.warpBatch)
	if t.wg {
		return 4 * n
	}
	return n
}

// threads is the block size.
func (t mmhTile) threads() int { return 32 * t.warps() }

// shared is the dynamic shared memory of a block: t.stages stages of
// t.rows rows of W and t.batch rows of X, t.lds() 16-bit values each.
// (wg: and 1024 bytes to align the ring to the swizzle's 1024.)
func (t mmhTile) shared() int {
	n := t.stages * (t.rows + t.batch) * t.lds() * 2
	if t.wg {
		n += 1024
	}
	return n
}

// blocks is the grid of a product of rows weight rows and B activation
// rows.
func (t mmhTile) blocks(rows, B int) int { return ceilDivHalf(rows, t.rows) * ceilDivHalf(B, t.batch) }

// mmhTileFor is the tile a product of B activation rows over rows weight
// rows runs in on a device of sms multiprocessors: pickTile over the
// picked tiles.
func mmhTileFor(B, rows, sms int) mmhTile { return pickTile(mmhTiles[:mmhPicked], B, rows, sms) }

// pickTile is the tile of tiles (largest first, the first two blocks a
// multiprocessor) a product of B activation rows over rows weight rows
// runs in on sms multiprocessors: the first where B fills its batch tile
// and its grid has a block for every second multiprocessor, else the
// largest of the others whose grid has a block for every multiprocessor,
// else the last. (At 512 tokens the two-a-multiprocessor tile measured
// best with 128 blocks, 4096 × 4096 and 4096 × 14336, where a block for
// every multiprocessor took 128 × 64.)
func pickTile(tiles []mmhTile, B, rows, sms int) mmhTile {
	if big := tiles[0]; B >= big.batch && 2*big.blocks(rows, B) >= sms {
		return big
	}
	for _, t := range tiles[1:] {
		if t.blocks(rows, B) >= sms {
			return t
		}
	}
	return tiles[len(tiles)-1]
}

// ceilDivHalf is ⌈a/b⌉ for positive b (the untagged twin of ceilDiv).
func ceilDivHalf(a, b int) int { return (a + b - 1) / b }
