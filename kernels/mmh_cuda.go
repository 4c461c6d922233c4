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
	Pad        int32
}

// mmhParamsSize is sizeof(MmhParams).
const mmhParamsSize = 48

// Compile-time check of the size the launch copies.
var _ [mmhParamsSize - unsafe.Sizeof(mmhParams{})]struct{}
var _ [unsafe.Sizeof(mmhParams{}) - mmhParamsSize]struct{}

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
			names = append(names, "mmh_"+typ+"_"+t.String())
		}
	}
	return names
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
func (d *Device) matMulHalf(op MatMulOp) error {
	return d.matMulHalfIn(op, mmhTileFor(op.X.Rows, op.W.Rows, d.ctx.Multiprocessors()))
}

// mmhConvertBlocks caps the grid of mmh_convert, which loops over the rest.
const mmhConvertBlocks = 4096

// matMulHalfIn runs op in tiles of tile.
func (d *Device) matMulHalfIn(op MatMulOp, tile mmhTile) error {
	if err := op.checkHalf(); err != nil {
		return err
	}
	if tile.shared() > d.maxShared {
		return fmt.Errorf("kernels: matmul: tile %v needs %d bytes of shared memory, the device gives a block %d", tile, tile.shared(), d.maxShared)
	}
	typ := mmhTypeName(op.W.Type)
	B, cols := op.X.Rows, op.W.Cols
	n8 := int64(B) * int64(cols) / 8
	blocks := int(min(int64(mmhConvertBlocks), (n8+255)/256))
	if err := d.launch("mmh_convert_"+typ, cuda.Dim3{X: blocks}, cuda.Dim3{X: 256}, 0,
		cuda.P(op.X.Ptr), cuda.P(op.Scratch), cuda.Arg(uint64(n8))); err != nil {
		return err
	}
	p := mmhParams{
		W: uint64(op.W.Ptr), X: uint64(op.Scratch), Y: uint64(op.Y.Ptr),
		Rows: int32(op.W.Rows), Cols: int32(cols), Batch: int32(B),
		Accumulate: int32(boolInt(op.Residual)), Type: int32(op.W.Type),
	}
	name := "mmh_" + typ + "_" + tile.String()
	return d.launch(name, cuda.Dim3{X: ceilDiv(B, tile.batch), Y: ceilDiv(op.W.Rows, tile.rows)}, cuda.Dim3{X: tile.threads()},
		tile.shared(), p.args()...)
}
