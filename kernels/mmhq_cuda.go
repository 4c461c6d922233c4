//go:build cuda

package kernels

import (
	"fmt"
	"unsafe"

	"llmserve/internal/cuda"
)

// The products of quantized weights on the 16-bit tensor cores (mmhq.cu):
// Y = X·Wᵀ with W dequantized to f16 stage by stage in shared memory and X
// rounded to f16 (mmh_convert_f16), mma.sync m16n8k16, f32 accumulation.
// MatMuls runs them in place of the int8 products only when asked
// (MatMulsOp.Q16), so that both can be measured on the same binary. The
// tiles are in mmhq_tile.go.

// mmhqParams mirrors struct MmhqParams in mmhq.cu field for field; it is
// passed to the kernel by value (TestGPUMatMulQ16Layout checks that the
// two agree).
type mmhqParams struct {
	W          uint64 // const uint8_t *w
	X          uint64 // const uint16_t *x
	Y          uint64 // float *y
	RowBytes   int64  // long long row_bytes
	Rows       int32
	Cols       int32
	Batch      int32
	Accumulate int32
	NSeg       int32
	Pad        int32
	mmSegs
}

// mmhqParamsSize is sizeof(MmhqParams).
const mmhqParamsSize = 96

// Compile-time checks of the size the launch copies and of the offsets
// mmhq.cu's static_asserts pin (row_bytes at 24, accumulate at 44, rows2 at
// 92), and w1 at 56.
var _ [mmhqParamsSize - unsafe.Sizeof(mmhqParams{})]struct{}
var _ [unsafe.Sizeof(mmhqParams{}) - mmhqParamsSize]struct{}
var _ = [1]struct{}{}[unsafe.Offsetof(mmhqParams{}.RowBytes)-24]
var _ = [1]struct{}{}[unsafe.Offsetof(mmhqParams{}.Accumulate)-44]
var _ = [1]struct{}{}[unsafe.Offsetof(mmhqParams{}.mmSegs)+unsafe.Offsetof(mmSegs{}.W1)-56]
var _ = [1]struct{}{}[unsafe.Offsetof(mmhqParams{}.mmSegs)+unsafe.Offsetof(mmSegs{}.Rows2)-92]

// args packs p into the 8-byte parameter slots of a launch: the driver
// reads the struct's bytes from the first slot on.
func (p *mmhqParams) args() []cuda.Arg {
	a := *(*[mmhqParamsSize / 8]cuda.Arg)(unsafe.Pointer(p))
	return a[:]
}

// mmhqKernelNames are the kernels of mmhq.fatbin.
func mmhqKernelNames() []string {
	names := []string{"mmhq_layout"}
	for _, k := range mmhqKinds {
		for _, t := range mmhqTiles {
			names = append(names, "mmhq_"+k.name+"_"+t.String())
		}
	}
	return names
}

// mmhqProductNames are the product kernels of mmhq.fatbin (those that take
// dynamic shared memory).
func mmhqProductNames() []string { return mmhqKernelNames()[1:] }

// mmhqSupports says whether matMulHalfQ reads w: Q4_0 or Q8_0 with rows of
// a positive multiple of 64 values, Q4_K, Q5_K or Q6_K of 256, Q8_0 or
// Q6_K in the wide layout.
func mmhqSupports(w DevMatrix) bool { return mmhqKind(w) != "" }

// mmhqKind is w's layout as mmhq.cu names it, or "".
func mmhqKind(w DevMatrix) string { return mmhqKindOf(w.Type, w.Rows, w.Cols, w.Wide) }

// checkHalfQ checks op for matMulHalfQ and returns W's layout: W of a
// layout mmhqSupports, W, X and the scratch at 16-byte aligned addresses,
// X B × W.Cols and Y B × W.Rows with B ≥ 1, and scratch enough for
// MatMulHalfScratchBytes (X rounded to f16).
func (op *MatMulOp) checkHalfQ() (string, error) {
	w, x, y := op.W, op.X, op.Y
	kind := mmhqKind(w)
	if kind == "" {
		return "", fmt.Errorf("kernels: matmul q16: %v matrix %d×%d (wide %v): want Q4_0 or Q8_0 with rows of a positive multiple of 64 values, Q4_K, Q5_K or Q6_K of 256 (wide: Q8_0 or Q6_K of 256)",
			w.Type, w.Rows, w.Cols, w.Wide)
	}
	if w.Ptr%16 != 0 || x.Ptr%16 != 0 || op.Scratch%16 != 0 {
		return "", fmt.Errorf("kernels: matmul q16: weights at %#x, activations at %#x, scratch at %#x: want 16-byte aligned addresses",
			uint64(w.Ptr), uint64(x.Ptr), uint64(op.Scratch))
	}
	if x.Cols != w.Cols || y.Cols != w.Rows || x.Rows != y.Rows || x.Rows < 1 {
		return "", fmt.Errorf("kernels: matmul q16: W %d×%d, X %d×%d, Y %d×%d: want X B×%d, Y B×%d, B ≥ 1",
			w.Rows, w.Cols, x.Rows, x.Cols, y.Rows, y.Cols, w.Cols, w.Rows)
	}
	if w.Rows > 65535*64 { // the grid's y extent in the tiles of 64 rows
		return "", fmt.Errorf("kernels: matmul q16: %d weight rows: at most %d", w.Rows, 65535*64)
	}
	if need := MatMulHalfScratchBytes(x.Rows, w.Cols); op.Scratch == 0 || op.ScratchBytes < need {
		return "", fmt.Errorf("kernels: matmul q16: scratch of %d bytes for %d rows of %d values: want %d", op.ScratchBytes, x.Rows, w.Cols, need)
	}
	return kind, nil
}

// matMulHalfQ queues op for quantized weights on the 16-bit tensor cores:
// the rounding of X to f16 into the scratch, then the product, in the tile
// mmhqTileFor picks.
func (d *Device) matMulHalfQ(op MatMulOp) error { return d.matMulHalfQs([]MatMulOp{op}) }

// matMulHalfQs queues the products of one input with one to three matrices
// of one layout and width (ops share X, Residual and the scratch) as one
// rounding of X and one launch, in the tile mmhqTileFor picks for their
// rows together.
func (d *Device) matMulHalfQs(ops []MatMulOp) error {
	return d.matMulHalfQIn(ops, mmhqTileFor(ops[0].X.Rows, opsRows(ops), d.ctx.Multiprocessors()))
}

// matMulHalfQIn runs ops (one to three products of one input, as
// matMulHalfQs) in tiles of tile (one of mmhqTiles).
func (d *Device) matMulHalfQIn(ops []MatMulOp, tile mmhTile) error {
	var kind string
	var rb int64
	tiles, err := launchTiles("matmul q16", ops, tile.rows, func(o MatMulOp) error {
		k, err := o.checkHalfQ()
		if err != nil {
			return err
		}
		orb, err := o.W.RowBytes()
		if err != nil {
			return fmt.Errorf("kernels: matmul q16: %w", err)
		}
		if kind == "" {
			kind, rb = k, orb
		} else if k != kind || orb != rb {
			return fmt.Errorf("kernels: matmul q16: %s with rows of %d bytes in one launch with %s of %d", k, orb, kind, rb)
		}
		return nil
	})
	if err != nil {
		return err
	}
	op := ops[0]
	if shared := mmhqShared(kind, tile); shared > d.maxShared {
		return fmt.Errorf("kernels: matmul q16: tile %v of %s needs %d bytes of shared memory, the device gives a block %d", tile, kind, shared, d.maxShared)
	}
	B, cols := op.X.Rows, op.W.Cols
	if err := d.convertHalf("f16", op); err != nil {
		return err
	}
	p := mmhqParams{
		W: uint64(op.W.Ptr), X: uint64(op.Scratch), Y: uint64(op.Y.Ptr), RowBytes: rb,
		Rows: int32(op.W.Rows), Cols: int32(cols), Batch: int32(B), Accumulate: int32(boolInt(op.Residual)),
		NSeg: int32(len(ops)), mmSegs: segsOf(ops),
	}
	name := "mmhq_" + kind + "_" + tile.String()
	return d.launch(name, cuda.Dim3{X: ceilDiv(B, tile.batch), Y: tiles}, cuda.Dim3{X: tile.threads()},
		mmhqShared(kind, tile), p.args()...)
}
