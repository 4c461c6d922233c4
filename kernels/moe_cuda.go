//go:build cuda

package kernels

import (
	"fmt"
	"slices"

	"llmserve/gguf"
	"llmserve/internal/cuda"
)

// moeMVQTypes are the types moe.cu's 8-bit products read (mvq_dot.cuh's
// groups, in the GGUF layout); the others run on moe_matvec.
var moeMVQTypes = []gguf.Type{gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K}

// moeThreads is MOE_THREADS in moe.cu.
const moeThreads = 256

// moeKernelNames are the kernels of moe.fatbin.
func moeKernelNames() []string {
	names := make([]string, 0, len(moeMVQTypes))
	for _, t := range moeMVQTypes {
		names = append(names, "moe_mvq_"+t.String())
	}
	return names
}

// MoEProductOp is the products of the chosen experts only: for slot i of
// B·Used (token i/Used's (i%Used)-th pick), Y[i, :] = W_e · X[i/Used, :]
// (X[i, :] with PerSlot), e = Pick[i]. W is expert 0's matrix, in the GGUF
// layout (not wide); expert e's starts Stride·e bytes after it (Stride ≥
// its size when Experts > 1). A quantized W's input is rounded to 8 bits
// per 32 values, as MatVecFused rounds it.
//
// With Up set (the up experts, of W's type and shape, UpStride bytes
// apart) it is the gated product Y[i, :] = act(W_e·x) ⊙ (Up_e·x) with Act; UpScratch (Y's
// shape) receives the up products where the two cannot run in one launch.
type MoEProductOp struct {
	W         DevMatrix
	Experts   int
	Stride    int64
	X         DevF32
	Pick      DevI32
	Used      int
	PerSlot   bool
	Y         DevF32
	Up        DevMatrix
	UpStride  int64
	Act       GLUAct
	UpScratch DevF32
}

// MoEProduct runs op: on moe_mvq_<TYPE> (the input staged once per block as
// 8-bit values, integer dot products, the gate and up products in one
// launch) for the common quantized types, else on moe_matvec_<TYPE>.
func (d *Device) MoEProduct(op MoEProductOp) error {
	w := op.W
	if w.Wide || !SupportsType(w.Type) || w.Cols%32 != 0 || w.Rows < 1 || op.Experts < 1 {
		return fmt.Errorf("kernels: moe product: %v matrix %d×%d (wide %v) for %d experts: want a GGUF-layout type the matvec kernels read, columns a multiple of 32",
			w.Type, w.Rows, w.Cols, w.Wide, op.Experts)
	}
	rb, err := w.RowBytes()
	if err != nil {
		return fmt.Errorf("kernels: moe product: %w", err)
	}
	if op.Experts > 1 && op.Stride < rb*int64(w.Rows) {
		return fmt.Errorf("kernels: moe product: experts %d bytes apart, each %d bytes", op.Stride, rb*int64(w.Rows))
	}
	n := op.Y.Rows
	xRows := n
	if !op.PerSlot && op.Used > 0 {
		xRows = n / op.Used
	}
	if op.Used < 1 || n < 1 || n%op.Used != 0 || n > 65535 || op.Pick.Len != n || op.Y.Cols != w.Rows || op.X.Cols != w.Cols || op.X.Rows != xRows {
		return fmt.Errorf("kernels: moe product: x %d×%d, y %d×%d, %d picks of %d per token, experts of %d×%d",
			op.X.Rows, op.X.Cols, op.Y.Rows, op.Y.Cols, op.Pick.Len, op.Used, w.Rows, w.Cols)
	}
	glu := op.Up.Ptr != 0
	if glu {
		u := op.Up
		if u.Type != w.Type || u.Rows != w.Rows || u.Cols != w.Cols || u.Wide || (op.Act != GLUSiLU && op.Act != GLUGELUTanh) ||
			(op.Experts > 1 && op.UpStride < rb*int64(w.Rows)) {
			return fmt.Errorf("kernels: moe product: up experts %v %d×%d (wide %v) %d bytes apart, act %d for gate experts %v %d×%d",
				u.Type, u.Rows, u.Cols, u.Wide, op.UpStride, op.Act, w.Type, w.Rows, w.Cols)
		}
	}
	if d.moeMVQ(w, glu) {
		return d.launchMoEMVQ(op, rb, glu)
	}
	if !glu {
		return d.launchMoEMatVec(op, op.W, op.Stride, op.Y, rb)
	}
	if op.UpScratch.Rows != n || op.UpScratch.Cols != w.Rows {
		return fmt.Errorf("kernels: moe product: up scratch %d×%d for %d×%d products", op.UpScratch.Rows, op.UpScratch.Cols, n, w.Rows)
	}
	if err := d.launchMoEMatVec(op, op.W, op.Stride, op.Y, rb); err != nil {
		return err
	}
	if err := d.launchMoEMatVec(op, op.Up, op.UpStride, op.UpScratch, rb); err != nil {
		return err
	}
	return d.GLUPair(op.Y, op.UpScratch, op.Y, op.Act)
}

// moeMVQ says whether moe_mvq reads w: a type of moeMVQTypes with whole
// groups (64 values; 256 for the k-quants), an even row count unless
// gated (rows go in pairs), and the staged input within the static
// shared memory of a block.
func (d *Device) moeMVQ(w DevMatrix, glu bool) bool {
	group := 64
	if w.Type == gguf.TypeQ4_K || w.Type == gguf.TypeQ5_K || w.Type == gguf.TypeQ6_K {
		group = 256
	}
	return slices.Contains(moeMVQTypes, w.Type) && w.Cols%group == 0 && (glu || w.Rows%2 == 0) &&
		mvqShared(1, w.Cols) <= min(d.maxShared, 48<<10)
}

// launchMoEMVQ launches moe_mvq_<TYPE>: a grid of (blocks, slots), each
// block staging its slot's input once and looping over row pairs; at most
// one wave of blocks.
func (d *Device) launchMoEMVQ(op MoEProductOp, rb int64, glu bool) error {
	w, n := op.W, op.Y.Rows
	name := "moe_mvq_" + w.Type.String()
	shared := mvqShared(1, w.Cols)
	resident, err := d.residentBlocks(name, moeThreads, shared)
	if err != nil {
		return err
	}
	pairs := w.Rows
	if !glu {
		pairs /= 2
	}
	blocks := min(ceilDiv(pairs, moeThreads/32), max(resident/n, 1))
	return d.launch(name, cuda.Dim3{X: blocks, Y: n}, cuda.Dim3{X: moeThreads}, shared,
		cuda.P(w.Ptr), cuda.P(op.Up.Ptr), cuda.Arg(rb), cuda.Arg(op.Stride), cuda.Arg(op.UpStride), cuda.I(w.Rows), cuda.I(w.Cols), cuda.P(op.X.Ptr),
		cuda.P(op.Pick.Ptr), cuda.I(op.Used), cuda.I(boolInt(op.PerSlot)), cuda.I(int(op.Act)), cuda.P(op.Y.Ptr))
}

// launchMoEMatVec launches moe_matvec_<TYPE> for the experts starting at
// w, stride bytes apart (op's shape), into y: a warp per row.
func (d *Device) launchMoEMatVec(op MoEProductOp, w DevMatrix, stride int64, y DevF32, rb int64) error {
	return d.launch("moe_matvec_"+w.Type.String(), cuda.Dim3{X: ceilDiv(w.Rows, 8), Y: y.Rows}, cuda.Dim3{X: 256}, 0,
		cuda.P(w.Ptr), cuda.Arg(rb), cuda.Arg(stride), cuda.I(w.Rows), cuda.I(w.Cols), cuda.P(op.X.Ptr), cuda.P(op.Pick.Ptr),
		cuda.I(op.Used), cuda.I(boolInt(op.PerSlot)), cuda.P(y.Ptr))
}
