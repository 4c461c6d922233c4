package kernels

import "fmt"

// The tiles of the tensor-core products (mmq.cu): which kernels are
// compiled per weight layout, and the shape of their blocks.

// mmqTile is the tile of Y one block of
// mmq_<type>_<rows>x<batch>[_w64][_cv] computes: rows weight rows by
// batch activation rows, one warp per warpRows × warpCols (_w64: 64
// rows); cv: the kernel converts each stage of W once per block for its
// warps (convert_stage in mmq.cu) instead of every warp decoding its rows
// itself.
type mmqTile struct {
	rows, batch, warpRows, warpCols int
	cv                              bool
}

// mmqTiles are the tiles compiled per type: the baseline 32-column tiles
// first (mmqTiles[0] is the test's reference), the narrow batch tiles,
// then the baseline tiles on converted stages, and two tiles of 64 × 32
// warps on converted stages.
var mmqTiles = []mmqTile{
	{64, 64, 32, 32, false}, {64, 128, 32, 32, false}, {128, 128, 32, 32, false},
	{64, 16, 32, 16, false}, {128, 16, 32, 16, false}, {64, 32, 32, 32, false}, {128, 32, 32, 32, false},
	{64, 64, 32, 32, true}, {64, 128, 32, 32, true}, {128, 128, 32, 32, true},
	{128, 64, 64, 32, true}, {128, 128, 64, 32, true},
}

func (t mmqTile) String() string {
	s := fmt.Sprintf("%dx%d", t.rows, t.batch)
	if t.warpRows == 64 {
		s += "_w64"
	}
	if t.cv {
		s += "_cv"
	}
	return s
}

// warps is the block's warp count: one per warpRows × warpCols sub-tile.
func (t mmqTile) warps() int { return (t.rows / t.warpRows) * (t.batch / t.warpCols) }

// threads is the block size.
func (t mmqTile) threads() int { return 32 * t.warps() }
