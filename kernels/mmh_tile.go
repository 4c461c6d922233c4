package kernels

import "fmt"

// The tiles of the 16-bit tensor-core products (mmh.cu): what each block
// computes, the shared memory it stages and which tile a product runs in.
// Untagged, so that the CPU model of the tile mapping (mmh_tile_test.go)
// tests the same figures the launches use.

// The k staging of mmh.cu: MMH_BK values per stage, MMH_STAGES stages in
// flight, rows of MMH_LDS 16-bit values in shared memory (16 bytes of
// padding past each row's MMH_BK values).
const (
	mmhBK     = 32
	mmhStages = 4
	mmhLDS    = mmhBK + 8
)

// mmhTile is the tile of Y one block of mmh_<type>_<rows>x<batch>
// computes, rows weight rows by batch activation rows, and the warp tile
// (warpRows × warpBatch) each of its warps computes.
type mmhTile struct{ rows, batch, warpRows, warpBatch int }

// mmhTiles are the tiles compiled per type (MMH_KERNELS in mmh.cu): the
// ones mmhTileFor picks from, largest first, then tiles of 64×64 warp
// tiles, compiled to be measured (BenchmarkGPUMatMulHalf) before any is
// picked.
var mmhTiles = []mmhTile{
	{128, 128, 64, 32}, {128, 64, 64, 32}, {64, 64, 32, 32},
	{128, 128, 64, 64}, {128, 256, 64, 64}, {256, 128, 64, 64},
}

// mmhPicked is how many of mmhTiles, from the first, mmhTileFor picks
// from.
const mmhPicked = 3

// String is the tile as the kernels name it: <rows>x<batch>_<warp tile>.
func (t mmhTile) String() string {
	return fmt.Sprintf("%dx%d_%dx%d", t.rows, t.batch, t.warpRows, t.warpBatch)
}

// warps is the block's warps: one per warp tile.
func (t mmhTile) warps() int { return (t.rows / t.warpRows) * (t.batch / t.warpBatch) }

// threads is the block size.
func (t mmhTile) threads() int { return 32 * t.warps() }

// shared is the dynamic shared memory of a block: mmhStages stages of
// t.rows rows of W and t.batch rows of X, mmhLDS 16-bit values each.
func (t mmhTile) shared() int { return mmhStages * (t.rows + t.batch) * mmhLDS * 2 }

// blocks is the grid of a product of rows weight rows and B activation
// rows.
func (t mmhTile) blocks(rows, B int) int { return ceilDivHalf(rows, t.rows) * ceilDivHalf(B, t.batch) }

// mmhTileFor is the tile a product of B activation rows over rows weight
// rows runs in on a device of sms multiprocessors: the largest whose grid
// has a block for every multiprocessor, else the smallest. (Not yet tuned
// by measurement: BenchmarkGPUMatMulHalf times every tile.)
func mmhTileFor(B, rows, sms int) mmhTile {
	for _, t := range mmhTiles[:mmhPicked] {
		if t.blocks(rows, B) >= sms {
			return t
		}
	}
	return mmhTiles[mmhPicked-1]
}

// ceilDivHalf is ⌈a/b⌉ for positive b (the untagged twin of ceilDiv).
func ceilDivHalf(a, b int) int { return (a + b - 1) / b }
