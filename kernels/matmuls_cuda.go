//go:build cuda

package kernels

import (
	"fmt"

	"llmserve/internal/cuda"
)

// MatMulsOp is the products of one input with one to three matrices of
// Cols columns, each written to (or, with Accumulate, added to) its Seg's
// Y, plus its Bias when set. The input is X (B × Cols f32, any B ≥ 1), or
// X RMS-normalized and scaled by Norm (when its Ptr is set, with Eps), or
// silu(X)·Up (when Up's Ptr is set: SwiGLU of a gate and an up product).
//
// It is the product of the steps of many tokens: quantized matrices of a
// type the int8 tensor-core kernels read (MatMulSupports) run there, the
// input computed and rounded to 8 bits once into Scratch for all of them
// (one launch, mmq_prep); F16 and BF16 matrices run on the 16-bit
// tensor-core kernels (mmh.cu) and the others on the matrix-vector kernels
// in chunks of MaxBatch rows, both from the input as f32, written to Temp
// (B × Cols) first when it is not X itself. With Q16, the quantized
// matrices mmhq.cu reads (mmhqSupports) run there instead of on the int8
// kernels: dequantized to f16 for the 16-bit tensor cores, from the input
// as f32 as well.
type MatMulsOp struct {
	Segs         []MatVecSeg
	X            DevF32
	Norm         DevF32
	Eps          float32
	Up           DevF32
	Accumulate   bool
	Scratch      cuda.DevPtr
	ScratchBytes int64
	Temp         DevF32
	Q16          bool // quantized matrices on the 16-bit tensor cores (mmhq.cu) where they read them
	// GLUOut, when set, takes the two products of a gate and an up matrix
	// that HalfGLU accepts as h = silu(gate)·up, B × rows values of their
	// 16-bit type (rounded to nearest), in one launch: their Y give the
	// shape only, and neither Bias nor Accumulate applies.
	GLUOut cuda.DevPtr
	// Rounded, when set, holds the input already rounded to the matrices'
	// 16-bit type (B × Cols values, as a GLUOut launch writes them): every
	// matrix runs on the 16-bit products from it, X gives the shape only,
	// and Norm and Up must be unset.
	Rounded cuda.DevPtr
}

// HalfGLU says whether a layer's gate, up and down matrices run as a GLU
// launch (MatMulsOp.GLUOut) whose output the down product reads as it is
// (MatMulsOp.Rounded): all three F16, or all BF16, as the 16-bit products
// read them, gate and up of one shape and down as wide as they are tall.
func HalfGLU(gate, up, down DevMatrix) bool {
	return matMulHalfSupports(gate) && matMulHalfSupports(up) && matMulHalfSupports(down) &&
		gate.Type == up.Type && up.Type == down.Type && gate.Rows == up.Rows && gate.Cols == up.Cols && down.Cols == gate.Rows
}

// MatMulsScratchBytes is the scratch a MatMulsOp of B rows of cols values
// needs.
func MatMulsScratchBytes(B, cols int) int64 {
	return max(MatMulScratchBytes(B, cols), MatMulHalfScratchBytes(B, cols))
}

func (op *MatMulsOp) check() error {
	if len(op.Segs) < 1 || len(op.Segs) > 3 {
		return fmt.Errorf("kernels: matmuls: %d matrices: want 1 to 3", len(op.Segs))
	}
	x := op.X
	if op.Norm.Ptr != 0 && op.Up.Ptr != 0 {
		return fmt.Errorf("kernels: matmuls: a norm and a SwiGLU input at once")
	}
	if op.Norm.Ptr != 0 && op.Norm.Len() != x.Cols {
		return fmt.Errorf("kernels: matmuls: norm of %d values for rows of %d", op.Norm.Len(), x.Cols)
	}
	if op.Up.Ptr != 0 && (op.Up.Rows != x.Rows || op.Up.Cols != x.Cols) {
		return fmt.Errorf("kernels: matmuls: up %d×%d for a gate of %d×%d", op.Up.Rows, op.Up.Cols, x.Rows, x.Cols)
	}
	if op.Rounded != 0 && (op.Norm.Ptr != 0 || op.Up.Ptr != 0) {
		return fmt.Errorf("kernels: matmuls: a rounded input with a norm or a SwiGLU")
	}
	if op.GLUOut != 0 {
		if len(op.Segs) != 2 || !matMulHalfSupports(op.Segs[0].W) || op.Accumulate || op.Segs[0].Bias.Ptr != 0 || op.Segs[1].Bias.Ptr != 0 {
			return fmt.Errorf("kernels: matmuls: a GLU output for %d matrices (residual %v): want a gate and an up matrix of a 16-bit type, no bias or residual", len(op.Segs), op.Accumulate)
		}
	}
	for _, s := range op.Segs {
		w, y := s.W, s.Y
		if op.Rounded != 0 && !matMulHalfSupports(w) {
			return fmt.Errorf("kernels: matmuls: a rounded input for a %v matrix: want F16 or BF16", w.Type)
		}
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
	mode := prepMode(op)
	x := op.X
	// The input goes to Temp as f32 first unless every matrix runs on the
	// int8 products and mmq_prep may compute it as it rounds it.
	f32 := false
	for _, s := range op.Segs {
		f32 = f32 || op.path(s.W) != pathInt8
	}
	if mode != prepPlain && f32 {
		if err := d.materialize(op); err != nil {
			return err
		}
		x, mode = op.Temp.Slice(0, op.X.Rows), prepPlain
	}
	if op.GLUOut != 0 {
		return d.matMulHalfGLU(op.product(0, x), op.product(1, x), op.GLUOut)
	}
	quantized := false // the scratch holds x rounded to 8 bits
	launched := make([]bool, len(op.Segs))
	for i, s := range op.Segs {
		mm := op.product(i, x)
		if !launched[i] { // else it ran in the launch of an earlier matrix
			switch op.path(s.W) {
			case pathInt8:
				if _, err := mm.check(); err != nil {
					return err
				}
				if !quantized {
					in := op
					in.X = x
					if err := d.prep(in, mode); err != nil {
						return err
					}
					quantized = true
				}
				if err := d.mmqProduct(mm); err != nil {
					return err
				}
			case pathHalf:
				// This matrix and the later ones of its type run as one
				// launch, from one rounding of the input.
				quantized = false // mmh rounds its input into the same scratch
				ops := op.launchWith(i, x, launched, func(w DevMatrix) bool { return w.Type == s.W.Type })
				if err := d.matMulHalfs(ops); err != nil {
					return err
				}
			case pathHalfQ:
				// This matrix and the later ones of its layout and row
				// size run as one launch, from one rounding of the input.
				quantized = false // mmhq rounds its input into the same scratch
				ops := op.launchWith(i, x, launched, func(w DevMatrix) bool { return sameQ16Layout(w, s.W) })
				if err := d.matMulHalfQs(ops); err != nil {
					return err
				}
			default:
				if err := d.matVecChunks(s, x, op.Accumulate); err != nil {
					return err
				}
				continue // the matrix-vector kernels add the bias themselves
			}
		}
		if s.Bias.Ptr != 0 {
			if err := d.AddBias(s.Y, s.Bias); err != nil {
				return err
			}
		}
	}
	return nil
}

// product is matrix i of op as one product of input x (from the Rounded
// input, when op has one).
func (op *MatMulsOp) product(i int, x DevF32) MatMulOp {
	s := op.Segs[i]
	mm := MatMulOp{W: s.W, X: x, Y: s.Y, Residual: op.Accumulate, Scratch: op.Scratch, ScratchBytes: op.ScratchBytes}
	if op.Rounded != 0 {
		mm.Scratch, mm.ScratchBytes, mm.Rounded = op.Rounded, MatMulHalfScratchBytes(x.Rows, x.Cols), true
	}
	return mm
}

// launchWith is matrix i of op and the later matrices on its path that
// same says one launch may run with it, as products of input x; it marks
// those later ones in done.
func (op *MatMulsOp) launchWith(i int, x DevF32, done []bool, same func(DevMatrix) bool) []MatMulOp {
	path := op.path(op.Segs[i].W)
	ops := []MatMulOp{op.product(i, x)}
	for j := i + 1; j < len(op.Segs); j++ {
		if w := op.Segs[j].W; op.path(w) == path && same(w) {
			ops = append(ops, op.product(j, x))
			done[j] = true
		}
	}
	return ops
}

// sameQ16Layout says whether mmhq.cu reads a and b in one launch: the
// same layout and row size.
func sameQ16Layout(a, b DevMatrix) bool {
	ra, errA := a.RowBytes()
	rb, errB := b.RowBytes()
	return errA == nil && errB == nil && ra == rb && a.Type == b.Type && a.Wide == b.Wide && a.Cols == b.Cols
}

// matMulPath is the kernels MatMuls runs a matrix on.
type matMulPath int

const (
	pathMatVec matMulPath = iota // the matrix-vector kernels, MaxBatch rows at a time
	pathInt8                     // mmq.cu
	pathHalf                     // mmh.cu
	pathHalfQ                    // mmhq.cu (asked for by MatMulsOp.Q16)
)

// path is where op runs a product with w.
func (op *MatMulsOp) path(w DevMatrix) matMulPath {
	switch kind := mmqKind(w); {
	case op.Q16 && mmhqSupports(w):
		return pathHalfQ
	case kind != "":
		return pathInt8
	case matMulHalfSupports(w):
		return pathHalf
	}
	return pathMatVec
}

// The input modes of mmq_prep (mmq_prep.cu).
const (
	prepPlain = 0 // X
	prepNorm  = 1 // RMSNorm(X)·Norm
	prepGLU   = 2 // silu(X)·Up
)

func prepMode(op MatMulsOp) int {
	switch {
	case op.Norm.Ptr != 0:
		return prepNorm
	case op.Up.Ptr != 0:
		return prepGLU
	}
	return prepPlain
}

// prep computes op's input and rounds it into op.Scratch in one launch:
// mmq_quantize for X as it is, mmq_prep for a normalized or SwiGLU input.
func (d *Device) prep(op MatMulsOp, mode int) error {
	if mode == prepPlain {
		return d.mmqQuantize(op.X, op.Scratch)
	}
	B, cols := op.X.Rows, op.X.Cols
	kpad := mmqKPad(cols)
	xq, xd := op.Scratch, op.Scratch.Add(int64(B)*int64(kpad))
	per := prepPer(mode, kpad/32)
	return d.launch("mmq_prep", cuda.Dim3{X: ceilDiv(kpad/32, 8*per), Y: B}, cuda.Dim3{X: 256}, 0,
		cuda.P(op.X.Ptr), cuda.P(op.Up.Ptr), cuda.P(op.Norm.Ptr), cuda.P(xq), cuda.P(xd),
		cuda.I(cols), cuda.I(kpad), cuda.F(op.Eps), cuda.I(mode), cuda.I(per))
}

// prepPer is how many of a row's nblk 32-value blocks each warp of
// mmq_prep rounds: one (a warp per block, every block of the row at once)
// except in the norm mode, where each of a row's thread blocks first reads
// the whole row for its sum of squares, so a row keeps to about eight
// thread blocks (4096 values: two blocks a warp).
func prepPer(mode, nblk int) int {
	if mode != prepNorm {
		return 1
	}
	return max(1, ceilDiv(nblk, 64))
}

// materialize writes op's input (normalized, or SwiGLU) to op.Temp as f32
// for the matrix-vector kernels.
func (d *Device) materialize(op MatMulsOp) error {
	t := op.Temp
	if t.Ptr == 0 || t.Rows < op.X.Rows || t.Cols != op.X.Cols {
		return fmt.Errorf("kernels: matmuls: a %v matrix runs on the matrix-vector kernels, which need the input in Temp (%d×%d), not %d×%d",
			op.Segs[0].W.Type, op.X.Rows, op.X.Cols, t.Rows, t.Cols)
	}
	t.Rows = op.X.Rows
	if op.Norm.Ptr != 0 {
		return d.RMSNorm(op.X, op.Norm, t, op.Eps)
	}
	return d.SwiGLU(op.X, op.Up, t)
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

// mmqProduct launches the product of op (checked) on activations already
// rounded into op.Scratch (prep), as MatMul runs it (mmqDefault).
func (d *Device) mmqProduct(op MatMulOp) error {
	kind := mmqKind(op.W)
	return d.mmqLaunch(op, kind, mmqDefault(kind, op.X.Rows))
}
