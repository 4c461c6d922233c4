//go:build cuda

package kernels

import (
	"fmt"

	"llmserve/internal/cuda"
)

// MatMulsOp is the products of one input X (B × Cols f32, any B ≥ 1) with
// one to three matrices of Cols columns, each written to (or, with
// Accumulate, added to) its Seg's Y, plus its Bias when set. It is the
// product of the steps of many tokens: matrices of a type the tensor-core
// kernels read (MatMulSupports) run there, X rounded to 8 bits once into
// Scratch for all of them; the others run on the matrix-vector kernels in
// chunks of MaxBatch rows.
type MatMulsOp struct {
	Segs         []MatVecSeg
	X            DevF32
	Accumulate   bool
	Scratch      cuda.DevPtr
	ScratchBytes int64
}

// MatMulsScratchBytes is the scratch a MatMulsOp of B rows of cols values
// needs.
func MatMulsScratchBytes(B, cols int) int64 { return MatMulScratchBytes(B, cols) }

func (op *MatMulsOp) check() error {
	if len(op.Segs) < 1 || len(op.Segs) > 3 {
		return fmt.Errorf("kernels: matmuls: %d matrices: want 1 to 3", len(op.Segs))
	}
	x := op.X
	for _, s := range op.Segs {
		w, y := s.W, s.Y
		if x.Cols != w.Cols || y.Cols != w.Rows || x.Rows != y.Rows || x.Rows < 1 {
			return fmt.Errorf("kernels: matmuls: W %d×%d, X %d×%d, Y %d×%d: want X B×%d, Y B×%d, B ≥ 1",
				w.Rows, w.Cols, x.Rows, x.Cols, y.Rows, y.Cols, w.Cols, w.Rows)
		}
		if s.Bias.Ptr != 0 && s.Bias.Len() != w.Rows {
			return fmt.Errorf("kernels: matmuls: bias of %d values for %d rows", s.Bias.Len(), w.Rows)
		}
	}
	return nil
}

// MatMuls runs op.
func (d *Device) MatMuls(op MatMulsOp) error {
	if err := op.check(); err != nil {
		return err
	}
	quantized := false
	for _, s := range op.Segs {
		if !MatMulSupports(s.W) {
			if err := d.matVecChunks(s, op.X, op.Accumulate); err != nil {
				return err
			}
			continue
		}
		mm := MatMulOp{W: s.W, X: op.X, Y: s.Y, Residual: op.Accumulate, Scratch: op.Scratch, ScratchBytes: op.ScratchBytes}
		if _, err := mm.check(); err != nil {
			return err
		}
		if !quantized {
			if err := d.quantizeRows(op.X, op.Scratch); err != nil {
				return err
			}
			quantized = true
		}
		if err := d.mmqProduct(mm); err != nil {
			return err
		}
		if s.Bias.Ptr != 0 {
			if err := d.AddBias(s.Y, s.Bias); err != nil {
				return err
			}
		}
	}
	return nil
}

// matVecChunks runs the product of s with x on the matrix-vector kernels,
// MaxBatch rows at a time.
func (d *Device) matVecChunks(s MatVecSeg, x DevF32, accumulate bool) error {
	for lo := 0; lo < x.Rows; lo += MaxBatch {
		n := min(MaxBatch, x.Rows-lo)
		one := s
		one.Y = rowsOf(s.Y, lo, n)
		if err := d.MatVecFused(MatVecOp{Segs: []MatVecSeg{one}, X: rowsOf(x, lo, n), Accumulate: accumulate}); err != nil {
			return err
		}
	}
	return nil
}

// rowsOf is rows lo..lo+n-1 of t.
func rowsOf(t DevF32, lo, n int) DevF32 {
	return DevF32{Ptr: t.Ptr.Add(int64(lo) * int64(t.Cols) * 4), Rows: n, Cols: t.Cols}
}

// quantizeRows rounds x to the 8-bit blocks the tensor-core products read,
// into scratch (MatMulScratchBytes(x.Rows, x.Cols) bytes).
func (d *Device) quantizeRows(x DevF32, scratch cuda.DevPtr) error {
	B, cols := x.Rows, x.Cols
	kpad := mmqKPad(cols)
	xq, xd := scratch, scratch.Add(int64(B)*int64(kpad))
	return d.launch("mmq_quantize", cuda.Dim3{X: ceilDiv(kpad/32, 8), Y: B}, cuda.Dim3{X: 256}, 0,
		cuda.P(x.Ptr), cuda.P(xq), cuda.P(xd), cuda.I(cols), cuda.I(kpad), cuda.I(B))
}

// mmqProduct launches the product of op (checked) on activations already
// rounded into op.Scratch by quantizeRows.
func (d *Device) mmqProduct(op MatMulOp) error {
	kind := mmqKind(op.W)
	tile := mmqTileFor(kind, op.X.Rows)
	B, cols := op.X.Rows, op.W.Cols
	kpad := mmqKPad(cols)
	rb, err := op.W.RowBytes()
	if err != nil {
		return fmt.Errorf("kernels: matmul: %w", err)
	}
	p := mmqParams{
		W: uint64(op.W.Ptr), XQ: uint64(op.Scratch), XD: uint64(op.Scratch.Add(int64(B) * int64(kpad))), Y: uint64(op.Y.Ptr), RowBytes: rb,
		Rows: int32(op.W.Rows), Cols: int32(cols), Batch: int32(B), KPad: int32(kpad),
		Accumulate: int32(boolInt(op.Residual)), Type: int32(op.W.typeCode()),
	}
	name := "mmq_" + kind + "_" + tile.String()
	return d.launch(name, cuda.Dim3{X: ceilDiv(op.W.Rows, tile.rows), Y: ceilDiv(B, tile.batch)}, cuda.Dim3{X: tile.threads()},
		mmqShared(kind, tile), p.args()...)
}
