//go:build cuda

package kernels

import (
	"fmt"
	"unsafe"

	"llmserve/gguf"
	"llmserve/internal/cuda"
)

// The tensor-core products of mmh.cu: Y = X·Wᵀ for a batch of activation
// rows at once, for F16 and BF16 weights, with mma.sync m16n8k16 and f32
// accumulation. The tiles are in mmh_tile.go.

// mmhParams mirrors struct MmhParams in mmh.cu field for field; it is
// passed to the kernel by value (TestGPUMatMulHalfLayout checks that the
// two agree).
type mmhParams struct {
	W          uint64 // const uint16_t *w
	X          uint64 // const uint16_t *x
	Y          uint64 // float *y
	Rows       int32
	Cols       int32
	Batch      int32
	Accumulate int32
	Type       int32
	NSeg       int32
	mmSegs
	GLU int32  // int glu
	_   int32  // int pad_
	H   uint64 // uint16_t *h
}

// mmSegs mirrors the fields of MmhParams and MmhqParams after nseg: the
// second and third matrices of a launch, their results and rows.
type mmSegs struct {
	W1, W2       uint64 // const uint16_t *w1, *w2 (MmhqParams: const uint8_t *)
	Y1, Y2       uint64 // float *y1, *y2
	Rows1, Rows2 int32
}

// segsOf is the mmSegs of a launch of ops (one to three).
func segsOf(ops []MatMulOp) mmSegs {
	var s mmSegs
	if len(ops) > 1 {
		s.W1, s.Y1, s.Rows1 = uint64(ops[1].W.Ptr), uint64(ops[1].Y.Ptr), int32(ops[1].W.Rows)
	}
	if len(ops) > 2 {
		s.W2, s.Y2, s.Rows2 = uint64(ops[2].W.Ptr), uint64(ops[2].Y.Ptr), int32(ops[2].W.Rows)
	}
	return s
}

// opsRows is the weight rows of ops together.
func opsRows(ops []MatMulOp) int {
	rows := 0
	for _, op := range ops {
		rows += op.W.Rows
	}
	return rows
}

// mmhParamsSize is sizeof(MmhParams).
const mmhParamsSize = 104

// Compile-time checks of the size the launch copies and of the offsets
// mmh.cu's static_asserts pin (rows at 24, nseg at 44, w1 at 48, rows2 at
// 84, glu at 88, h at 96).
var _ [mmhParamsSize - unsafe.Sizeof(mmhParams{})]struct{}
var _ [unsafe.Sizeof(mmhParams{}) - mmhParamsSize]struct{}
var _ = [1]struct{}{}[unsafe.Offsetof(mmhParams{}.Rows)-24]
var _ = [1]struct{}{}[unsafe.Offsetof(mmhParams{}.NSeg)-44]
var _ = [1]struct{}{}[unsafe.Offsetof(mmhParams{}.mmSegs)+unsafe.Offsetof(mmSegs{}.W1)-48]
var _ = [1]struct{}{}[unsafe.Offsetof(mmhParams{}.mmSegs)+unsafe.Offsetof(mmSegs{}.Rows2)-84]
var _ = [1]struct{}{}[unsafe.Offsetof(mmhParams{}.GLU)-88]
var _ = [1]struct{}{}[unsafe.Offsetof(mmhParams{}.H)-96]

// args packs p into the 8-byte parameter slots of a launch: the driver
// reads the struct's bytes from the first slot on.
func (p *mmhParams) args() []cuda.Arg {
	a := *(*[mmhParamsSize / 8]cuda.Arg)(unsafe.Pointer(p))
	return a[:]
}

// mmhTypeName is the kernels' name of a 16-bit weight type, or "".
func mmhTypeName(t gguf.Type) string {
	switch t {
	case gguf.TypeF16:
		return "f16"
	case gguf.TypeBF16:
		return "bf16"
	}
	return ""
}

// mmhKernelNames are the kernels of mmh.fatbin.
func mmhKernelNames() []string {
	names := []string{"mmh_layout"}
	for _, typ := range []string{"f16", "bf16"} {
		names = append(names, "mmh_convert_"+typ)
		for _, t := range mmhTiles {
			if !t.wg {
				names = append(names, "mmh_"+typ+"_"+t.String())
			}
		}
	}
	return names
}

// mmwKernelNames are the kernels of mmw.ptx: the wg tiles.
func mmwKernelNames() []string {
	var names []string
	for _, typ := range []string{"f16", "bf16"} {
		for _, t := range mmhTiles {
			if t.wg {
				names = append(names, "mmw_"+typ+"_"+t.String())
			}
		}
	}
	return names
}

// mmhKernel is the kernel of a 16-bit product of type typ in tile t.
func mmhKernel(typ string, t mmhTile) string {
	if t.wg {
		return "mmw_" + typ + "_" + t.String()
	}
	return "mmh_" + typ + "_" + t.String()
}

// mmhTileRuns says whether this device runs tile t (checkHalfTile).
func (d *Device) mmhTileRuns(t mmhTile) bool { return d.checkHalfTile("", t) == nil }

// checkHalfTile says why this device cannot run tile t over the matrices ws
// (what names the product in errors), or nil: its shared memory must fit a
// block, a wg tile needs the wgmma module (compute capability 9.0), and a
// pipe tile takes matrices of fewer than 2³² values.
func (d *Device) checkHalfTile(what string, t mmhTile, ws ...DevMatrix) error {
	if t.shared() > d.maxShared {
		return fmt.Errorf("kernels: %s: tile %v needs %d bytes of shared memory, the device gives a block %d", what, t, t.shared(), d.maxShared)
	}
	if t.wg && d.wgmmaErr != nil {
		return fmt.Errorf("kernels: %s: tile %v: %w", what, t, d.wgmmaErr)
	}
	for _, w := range ws {
		if t.pipe && int64(w.Rows)*int64(w.Cols) >= 1<<32 {
			return fmt.Errorf("kernels: %s: tile %v takes matrices of fewer than 2^32 values, not %d×%d", what, t, w.Rows, w.Cols)
		}
	}
	return nil
}

// launchHalf queues the product p describes, in tiles of tile over grid
// rows tiles, op being its first matrix: op's input rounded into the
// scratch first, unless it is already (op.Rounded).
func (d *Device) launchHalf(op MatMulOp, tile mmhTile, tiles int, p mmhParams) error {
	typ := mmhTypeName(op.W.Type)
	if !op.Rounded {
		if err := d.convertHalf(typ, op); err != nil {
			return err
		}
	}
	return d.launch(mmhKernel(typ, tile), cuda.Dim3{X: ceilDiv(op.X.Rows, tile.batch), Y: tiles}, cuda.Dim3{X: tile.threads()},
		tile.shared(), p.args()...)
}

// MatMulHalfScratchBytes is the scratch a 16-bit-weight MatMulOp of B rows
// of cols values needs: X rounded to the weights' type, B × cols 16-bit
// values.
func MatMulHalfScratchBytes(B, cols int) int64 { return int64(B) * int64(cols) * 2 }

// matMulHalfSupports says whether matMulHalf reads w: F16 or BF16 as
// stored, rows of a positive multiple of 8 values.
func matMulHalfSupports(w DevMatrix) bool {
	return mmhTypeName(w.Type) != "" && !w.Wide && w.Rows > 0 && w.Cols > 0 && w.Cols%8 == 0
}

// checkHalf checks op for matMulHalf: W F16 or BF16 with rows of a
// multiple of 8 values, W, X and the scratch at 16-byte aligned addresses,
// X B × W.Cols and Y B × W.Rows with B ≥ 1, and scratch enough for
// MatMulHalfScratchBytes.
func (op *MatMulOp) checkHalf() error {
	w, x, y := op.W, op.X, op.Y
	if !matMulHalfSupports(w) {
		return fmt.Errorf("kernels: matmul: %v matrix %d×%d (wide %v): want F16 or BF16 as stored with rows of a positive multiple of 8 values", w.Type, w.Rows, w.Cols, w.Wide)
	}
	if w.Ptr%16 != 0 || x.Ptr%16 != 0 || op.Scratch%16 != 0 {
		return fmt.Errorf("kernels: matmul: weights at %#x, activations at %#x, scratch at %#x: want 16-byte aligned addresses",
			uint64(w.Ptr), uint64(x.Ptr), uint64(op.Scratch))
	}
	if x.Cols != w.Cols || y.Cols != w.Rows || x.Rows != y.Rows || x.Rows < 1 {
		return fmt.Errorf("kernels: matmul: W %d×%d, X %d×%d, Y %d×%d: want X B×%d, Y B×%d, B ≥ 1",
			w.Rows, w.Cols, x.Rows, x.Cols, y.Rows, y.Cols, w.Cols, w.Rows)
	}
	if w.Rows > 65535*64 { // the grid's y extent in the tiles of 64 rows
		return fmt.Errorf("kernels: matmul: %d weight rows: at most %d", w.Rows, 65535*64)
	}
	if need := MatMulHalfScratchBytes(x.Rows, w.Cols); op.Scratch == 0 || op.ScratchBytes < need {
		return fmt.Errorf("kernels: matmul: scratch of %d bytes for %d rows of %d values: want %d", op.ScratchBytes, x.Rows, w.Cols, need)
	}
	return nil
}

// matMulHalf queues op for F16 or BF16 weights: the rounding of X into the
// scratch, then the product, in the tile mmhTileFor picks.
func (d *Device) matMulHalf(op MatMulOp) error { return d.matMulHalfs([]MatMulOp{op}) }

// matMulHalfs queues the products of one input with one to three matrices
// of one 16-bit type (ops share X, Residual and the scratch) as one
// rounding of X and one launch, in the tile mmhTileFor picks for their rows
// together.
func (d *Device) matMulHalfs(ops []MatMulOp) error {
	return d.matMulHalfIn(ops, d.halfTileFor(ops[0].X.Rows, opsRows(ops)))
}

// halfTileFor is the tile of a 16-bit product of B activation rows over
// rows weight rows: on a device with the wgmma products (and
// LLMSERVE_WGMMA not 0), from mmwMinBatch rows pickTile over mmwPicked;
// else mmhTileFor's.
func (d *Device) halfTileFor(B, rows int) mmhTile {
	if d.wgmmaPick && B >= mmwMinBatch {
		return pickTile(mmwPicked, B, rows, d.ctx.Multiprocessors())
	}
	return mmhTileFor(B, rows, d.ctx.Multiprocessors())
}

// mmwPicked are the wg tiles halfTileFor picks from, largest first. At 512
// tokens (H100, F16, µs) 128×128 in four stages took 146 at 14336×4096
// (three stages 143, mmh's pick 227) and 131 at 4096×14336 (three stages
// 206: one block a multiprocessor either way, and less in flight; mmh 227).
var mmwPicked = []mmhTile{{128, 128, 64, 128, 64, 4, false, true}, {128, 64, 64, 64, 64, 4, false, true}}

// mmwMinBatch is the fewest activation rows the wgmma tiles are picked for:
// those measured (512 rows); below, mmh's tiles stay until they are.
const mmwMinBatch = 128

// mmhConvertBlocks caps the grid of mmh_convert, which loops over the rest.
const mmhConvertBlocks = 4096

// launchTiles checks ops, the one to three products of one launch of a
// 16-bit product (what names it in errors): each by check, and all with
// the first's input, residual add and scratch; it returns their row tiles
// of rows rows together, the launch's grid rows (at most 65535).
func launchTiles(what string, ops []MatMulOp, rows int, check func(MatMulOp) error) (int, error) {
	if len(ops) < 1 || len(ops) > 3 {
		return 0, fmt.Errorf("kernels: %s: %d matrices in one launch: want 1 to 3", what, len(ops))
	}
	tiles := 0
	for i, o := range ops {
		if err := check(o); err != nil {
			return 0, err
		}
		if o.X != ops[0].X || o.Residual != ops[0].Residual || o.Scratch != ops[0].Scratch {
			return 0, fmt.Errorf("kernels: %s: matrix %d of one launch: another input, residual add or scratch than the first's", what, i)
		}
		tiles += ceilDiv(o.W.Rows, rows)
	}
	if tiles > 65535 {
		return 0, fmt.Errorf("kernels: %s: %d tiles of %d weight rows: at most 65535", what, tiles, rows)
	}
	return tiles, nil
}

// convertHalf queues mmh_convert_<typ>: op's input X rounded to the 16-bit
// type typ ("f16", "bf16") into op's scratch.
func (d *Device) convertHalf(typ string, op MatMulOp) error {
	n8 := int64(op.X.Rows) * int64(op.X.Cols) / 8
	blocks := int(min(int64(mmhConvertBlocks), (n8+255)/256))
	return d.launch("mmh_convert_"+typ, cuda.Dim3{X: blocks}, cuda.Dim3{X: 256}, 0,
		cuda.P(op.X.Ptr), cuda.P(op.Scratch), cuda.Arg(uint64(n8)))
}

// matMulHalfIn runs ops (one to three products of one input, as
// matMulHalfs) in tiles of tile.
func (d *Device) matMulHalfIn(ops []MatMulOp, tile mmhTile) error {
	tiles, err := launchTiles("matmul", ops, tile.rows, func(o MatMulOp) error {
		if err := o.checkHalf(); err != nil {
			return err
		}
		if o.W.Type != ops[0].W.Type {
			return fmt.Errorf("kernels: matmul: a %v matrix in one launch with a %v one", o.W.Type, ops[0].W.Type)
		}
		return d.checkHalfTile("matmul", tile, o.W)
	})
	if err != nil {
		return err
	}
	op := ops[0]
	p := mmhParams{
		W: uint64(op.W.Ptr), X: uint64(op.Scratch), Y: uint64(op.Y.Ptr),
		Rows: int32(op.W.Rows), Cols: int32(op.W.Cols), Batch: int32(op.X.Rows),
		Accumulate: int32(boolInt(op.Residual)), Type: int32(op.W.Type), NSeg: int32(len(ops)), mmSegs: segsOf(ops),
	}
	return d.launchHalf(op, tile, tiles, p)
}

// matMulHalfGLU queues h = silu(gate)·up for one input: gate and up are
// products of one 16-bit type and shape with one input X (their Y give
// the shape only), and h, B × rows 16-bit values of that type at a 2-byte
// aligned address, receives each value rounded to nearest (the input of a
// down product, MatMulOp.Rounded). One rounding of X and one launch, whose
// blocks compute half a tile of rows of each matrix, in the tile
// mmhTileFor picks for both matrices' rows together.
func (d *Device) matMulHalfGLU(gate, up MatMulOp, h cuda.DevPtr) error {
	return d.matMulHalfGLUIn(gate, up, h, d.halfTileFor(gate.X.Rows, 2*gate.W.Rows))
}

// matMulHalfGLUIn is matMulHalfGLU in tiles of tile.
func (d *Device) matMulHalfGLUIn(gate, up MatMulOp, h cuda.DevPtr, tile mmhTile) error {
	for _, o := range []MatMulOp{gate, up} {
		if err := o.checkHalf(); err != nil {
			return fmt.Errorf("kernels: matmul glu: %w", err)
		}
	}
	if gate.W.Type != up.W.Type || gate.W.Rows != up.W.Rows || gate.X != up.X || gate.Scratch != up.Scratch || gate.Residual || up.Residual || gate.Rounded || up.Rounded {
		return fmt.Errorf("kernels: matmul glu: gate %v %d×%d and up %v %d×%d: want one type and shape, one input and scratch, no residual add",
			gate.W.Type, gate.W.Rows, gate.W.Cols, up.W.Type, up.W.Rows, up.W.Cols)
	}
	if h == 0 || h%2 != 0 {
		return fmt.Errorf("kernels: matmul glu: output at %#x: want a 2-byte aligned address", uint64(h))
	}
	// The up warps leave their accumulators in the stages' shared memory.
	if !tile.gluOK() {
		return fmt.Errorf("kernels: matmul glu: tile %v does not split into gate and up halves", tile)
	}
	if err := d.checkHalfTile("matmul glu", tile, gate.W); err != nil {
		return err
	}
	tiles := ceilDiv(gate.W.Rows, tile.rows/2)
	if tiles > 65535 {
		return fmt.Errorf("kernels: matmul glu: %d tiles of %d weight rows: at most 65535", tiles, tile.rows/2)
	}
	p := mmhParams{
		W: uint64(gate.W.Ptr), X: uint64(gate.Scratch), Rows: int32(gate.W.Rows), Cols: int32(gate.W.Cols), Batch: int32(gate.X.Rows),
		Type: int32(gate.W.Type), NSeg: 2, mmSegs: mmSegs{W1: uint64(up.W.Ptr), Rows1: int32(up.W.Rows)}, GLU: 1, H: uint64(h),
	}
	return d.launchHalf(gate, tile, tiles, p)
}
