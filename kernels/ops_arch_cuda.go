//go:build cuda

package kernels

import (
	"fmt"
	"math"

	"llmserve/internal/cuda"
)

// MaxExpertsUsed is the most experts MoERoute picks per token
// (ARCH_MOE_MAXK in ops_arch.cu).
const MaxExpertsUsed = 32

// GLUAct is the activation of a gated feed-forward on the device.
type GLUAct int

const (
	GLUSiLU     GLUAct = 0 // x·sigmoid(x)
	GLUGELUTanh GLUAct = 1 // GELU by its tanh approximation
)

// GLUOp writes act(gate)·up to Out (B × F), where row r of the gate is the
// F values at Gate + r·GateStride floats and row r of up those at Up +
// r·UpStride: separate B × F buffers (strides F), or one B × 2F product
// holding gate then up (Up = Gate + F floats, strides 2F). Out may be the
// gate or the up buffer when its stride is F.
type GLUOp struct {
	Gate, Up             cuda.DevPtr
	GateStride, UpStride int
	Out                  DevF32
	Act                  GLUAct
}

// GLU runs op.
func (d *Device) GLU(op GLUOp) error {
	f, rows := op.Out.Cols, op.Out.Rows
	if rows < 1 || f < 1 || op.GateStride < f || op.UpStride < f || op.Gate == 0 || op.Up == 0 || (op.Act != GLUSiLU && op.Act != GLUGELUTanh) {
		return fmt.Errorf("kernels: glu: out %d×%d, gate stride %d, up stride %d, act %d", rows, f, op.GateStride, op.UpStride, op.Act)
	}
	// In place only over rows of F: with a longer stride a thread's write
	// would land on values another thread has yet to read.
	if (op.Out.Ptr == op.Gate && op.GateStride != f) || (op.Out.Ptr == op.Up && op.UpStride != f) {
		return fmt.Errorf("kernels: glu: out at the gate or up rows of stride %d or %d, not %d", op.GateStride, op.UpStride, f)
	}
	n := rows * f
	return d.launch("glu_act", cuda.Dim3{X: ceilDiv(n, elemBlock)}, cuda.Dim3{X: elemBlock}, 0,
		cuda.P(op.Gate), cuda.P(op.Up), cuda.P(op.Out.Ptr), cuda.I(f), cuda.I(op.GateStride), cuda.I(op.UpStride), cuda.I(rows), cuda.I(int(op.Act)))
}

// GLUPair writes act(gate)·up to out, all B × F; out may be gate or up.
func (d *Device) GLUPair(gate, up, out DevF32, act GLUAct) error {
	if gate.Rows != out.Rows || gate.Cols != out.Cols || up.Rows != out.Rows || up.Cols != out.Cols {
		return fmt.Errorf("kernels: glu: gate %d×%d, up %d×%d, out %d×%d", gate.Rows, gate.Cols, up.Rows, up.Cols, out.Rows, out.Cols)
	}
	return d.GLU(GLUOp{Gate: gate.Ptr, Up: up.Ptr, GateStride: gate.Cols, UpStride: up.Cols, Out: out, Act: act})
}

// GLUFused writes act(gate)·up to out (B × F) from in (B × 2F), whose rows
// hold the F gate values then the F up values.
func (d *Device) GLUFused(in, out DevF32, act GLUAct) error {
	if in.Rows != out.Rows || in.Cols != 2*out.Cols {
		return fmt.Errorf("kernels: glu: fused in %d×%d, out %d×%d: want in B×2F, out B×F", in.Rows, in.Cols, out.Rows, out.Cols)
	}
	return d.GLU(GLUOp{Gate: in.Ptr, Up: in.Ptr.Add(4 * int64(out.Cols)), GateStride: in.Cols, UpStride: in.Cols, Out: out, Act: act})
}

// sameShape checks that out may receive an element-wise op of in.
func sameShape(op string, in, out DevF32) error {
	if in.Rows != out.Rows || in.Cols != out.Cols || in.Len() < 1 {
		return fmt.Errorf("kernels: %s: in %d×%d, out %d×%d", op, in.Rows, in.Cols, out.Rows, out.Cols)
	}
	return nil
}

// Scale writes in·s to out (element-wise; out may be in).
func (d *Device) Scale(in, out DevF32, s float32) error {
	if err := sameShape("scale", in, out); err != nil {
		return err
	}
	n := in.Len()
	return d.launch("scale_f32", cuda.Dim3{X: ceilDiv(n, elemBlock)}, cuda.Dim3{X: elemBlock}, 0,
		cuda.P(in.Ptr), cuda.P(out.Ptr), cuda.I(n), cuda.F(s), cuda.I(n), cuda.I(n))
}

// SoftCap writes c·tanh(in/c) to out (element-wise; out may be in); c > 0.
func (d *Device) SoftCap(in, out DevF32, c float32) error {
	if err := sameShape("softcap", in, out); err != nil {
		return err
	}
	if !(c > 0) || math.IsInf(float64(c), 0) {
		return fmt.Errorf("kernels: softcap: bound %g, want a positive finite value", c)
	}
	n := in.Len()
	return d.launch("softcap_f32", cuda.Dim3{X: ceilDiv(n, elemBlock)}, cuda.Dim3{X: elemBlock}, 0,
		cuda.P(in.Ptr), cuda.P(out.Ptr), cuda.I(n), cuda.F(c), cuda.F(1/c))
}

// CopyCols copies columns off..off+dst.Cols-1 of every row of src into
// dst (src.Rows × the width of dst; a distinct buffer): the split of a
// fused product.
func (d *Device) CopyCols(src DevF32, off int, dst DevF32) error {
	if src.Rows != dst.Rows || dst.Rows < 1 || dst.Cols < 1 || off < 0 || off+dst.Cols > src.Cols {
		return fmt.Errorf("kernels: copy_cols: src %d×%d, columns %d..%d, dst %d×%d", src.Rows, src.Cols, off, off+dst.Cols, dst.Rows, dst.Cols)
	}
	n := dst.Len()
	return d.launch("copy_cols", cuda.Dim3{X: ceilDiv(n, elemBlock)}, cuda.Dim3{X: elemBlock}, 0,
		cuda.P(src.Ptr), cuda.P(dst.Ptr), cuda.I(dst.Rows), cuda.I(dst.Cols), cuda.I(src.Cols), cuda.I(off))
}

// opsArchKernels lists the kernels of ops_arch.cu.
func opsArchKernels() []string {
	names := []string{"glu_act", "scale_f32", "softcap_f32", "copy_cols", "moe_route", "moe_accum", "moe_combine", "moe_gather", "moe_combine_rows"}
	for _, t := range matvecTypes {
		names = append(names, "moe_matvec_"+t.String())
	}
	return names
}

// MoERouteOp turns the router's logits (B × E) into expert weights: per
// row, the softmax over the experts, the Used most probable (the lower
// index first among equals), their probabilities renormalized to sum 1.
// W (B × E) receives them densely, zeros for the experts not chosen; when
// Pick's Ptr is set, Pick (B·Used) receives each row's chosen experts, the
// most probable first, and Weight (B × Used) their weights.
type MoERouteOp struct {
	Logits, W DevF32
	Used      int
	Pick      DevI32
	Weight    DevF32
}

// MoERoute runs op.
func (d *Device) MoERoute(op MoERouteOp) error {
	logits, used := op.Logits, op.Used
	if err := sameShape("moe_route", logits, op.W); err != nil {
		return err
	}
	if used < 1 || used > logits.Cols || used > MaxExpertsUsed {
		return fmt.Errorf("kernels: moe_route: %d of %d experts per token (at most %d)", used, logits.Cols, MaxExpertsUsed)
	}
	if op.Pick.Ptr != 0 && (op.Pick.Len != logits.Rows*used || op.Weight.Rows != logits.Rows || op.Weight.Cols != used || op.Weight.Ptr == 0) {
		return fmt.Errorf("kernels: moe_route: %d picks and %d×%d weights for %d rows of %d experts", op.Pick.Len, op.Weight.Rows, op.Weight.Cols, logits.Rows, used)
	}
	return d.launch("moe_route", cuda.Dim3{X: ceilDiv(logits.Rows, 64)}, cuda.Dim3{X: 64}, 0,
		cuda.P(logits.Ptr), cuda.P(op.W.Ptr), cuda.P(op.Pick.Ptr), cuda.P(op.Weight.Ptr), cuda.I(logits.Cols), cuda.I(used), cuda.I(logits.Rows))
}

// MoECombine writes out[b, :] = Σ_j weight[b, j]·y[b·Used + j, :]: each
// token's chosen experts' outputs (B·Used rows), weighted (B × Used).
func (d *Device) MoECombine(out, y, weight DevF32) error {
	used := weight.Cols
	if used < 1 || weight.Rows != out.Rows || y.Rows != out.Rows*used || y.Cols != out.Cols || out.Len() < 1 {
		return fmt.Errorf("kernels: moe_combine: out %d×%d, y %d×%d, weights %d×%d", out.Rows, out.Cols, y.Rows, y.Cols, weight.Rows, weight.Cols)
	}
	n := out.Len()
	return d.launch("moe_combine", cuda.Dim3{X: ceilDiv(n, elemBlock)}, cuda.Dim3{X: elemBlock}, 0,
		cuda.P(out.Ptr), cuda.P(y.Ptr), cuda.P(weight.Ptr), cuda.I(used), cuda.I(out.Cols), cuda.I(out.Rows))
}

// MoEAccum adds w[r, expert]·y[r, :] to acc[r, :] for every row r (writes
// it, with init); rows whose weight is zero add nothing, whatever y holds.
func (d *Device) MoEAccum(acc, y, w DevF32, expert int, init bool) error {
	if err := sameShape("moe_accum", y, acc); err != nil {
		return err
	}
	if w.Rows != y.Rows || expert < 0 || expert >= w.Cols {
		return fmt.Errorf("kernels: moe_accum: weights %d×%d for %d rows, expert %d", w.Rows, w.Cols, y.Rows, expert)
	}
	n := y.Len()
	return d.launch("moe_accum", cuda.Dim3{X: ceilDiv(n, elemBlock)}, cuda.Dim3{X: elemBlock}, 0,
		cuda.P(acc.Ptr), cuda.P(y.Ptr), cuda.P(w.Ptr), cuda.I(w.Cols), cuda.I(expert), cuda.I(y.Cols), cuda.I(y.Rows), cuda.I(boolInt(init)))
}

// AttentionArchOp is attention over the cache as Attention computes it,
// with the logit scale Scale instead of 1/√HeadDim, logits soft-capped to
// Cap·tanh(logit/Cap) when Cap > 0, and each token seeing only the last
// Window positions up to its own when Window > 0.
type AttentionArchOp struct {
	Cache    DevKVCache
	Q, Out   DevF32 // B × Heads*HeadDim
	Heads    int
	Pos, Seq DevI32
	Scratch  DevF32 // AttentionScratch(Cache, B, Heads) floats at least
	Scale    float32
	Cap      float32
	Window   int
}

// AttentionArch runs op: attention_part (attention.cu) per (token, KV
// head, split) with op's scale, soft-cap and window, then attention_merge.
func (d *Device) AttentionArch(op AttentionArchOp) error {
	if op.Window < 0 || op.Cap < 0 || math.IsNaN(float64(op.Scale)) || math.IsNaN(float64(op.Cap)) {
		return fmt.Errorf("kernels: attention_arch: window %d, cap %g, scale %g", op.Window, op.Cap, op.Scale)
	}
	return d.attention("attention_arch", op.Cache, op.Q, op.Out, op.Heads, op.Pos, op.Seq, op.Scratch, op.Scale, op.Cap, op.Window)
}

// MoEGatherOp copies the input row of each (token, pick) slot of an expert
// mixture into the grouped order: Out[r, :] = X[Order[r]/Used, :], where
// slot s = b·Used + j is token b's j-th pick and Order lists the slots of
// expert 0, then of expert 1, ... (one per row of Out). A slot whose token
// is not a row of X gives a row of NaN.
type MoEGatherOp struct {
	X     DevF32 // B × cols, the tokens' inputs
	Order DevI32 // Out.Rows slots
	Used  int    // picks per token
	Out   DevF32 // slots × cols
}

// MoEGather runs op.
func (d *Device) MoEGather(op MoEGatherOp) error {
	x, out := op.X, op.Out
	if op.Used < 1 || x.Rows < 1 || x.Cols < 1 || out.Rows < 1 || out.Cols != x.Cols || op.Order.Len != out.Rows || out.Rows > x.Rows*op.Used {
		return fmt.Errorf("kernels: moe_gather: x %d×%d, %d slots of %d picks per token, out %d×%d", x.Rows, x.Cols, op.Order.Len, op.Used, out.Rows, out.Cols)
	}
	n := out.Len()
	return d.launch("moe_gather", cuda.Dim3{X: ceilDiv(n, elemBlock)}, cuda.Dim3{X: elemBlock}, 0,
		cuda.P(x.Ptr), cuda.P(op.Order.Ptr), cuda.P(out.Ptr), cuda.I(op.Used), cuda.I(x.Cols), cuda.I(out.Rows), cuda.I(x.Rows))
}

// MoECombineRowsOp is the weighted sum of each token's chosen experts'
// outputs where they lie in the grouped order: Out[b, :] = Σ_j Weight[b,
// j]·Y[Inv[b·Used + j], :], summed j = 0..Used-1 as MoECombine sums. A row
// Inv names outside Y makes the token's sums NaN.
type MoECombineRowsOp struct {
	Out    DevF32 // B × cols
	Y      DevF32 // the grouped outputs, rows × cols
	Weight DevF32 // B × Used, each token's picks' weights
	Inv    DevI32 // B·Used: each slot's row of Y
}

// MoECombineRows runs op.
func (d *Device) MoECombineRows(op MoECombineRowsOp) error {
	out, y, w := op.Out, op.Y, op.Weight
	used := w.Cols
	if used < 1 || out.Len() < 1 || w.Rows != out.Rows || y.Rows < 1 || y.Cols != out.Cols || op.Inv.Len != out.Rows*used {
		return fmt.Errorf("kernels: moe_combine_rows: out %d×%d, y %d×%d, weights %d×%d, %d slots", out.Rows, out.Cols, y.Rows, y.Cols, w.Rows, w.Cols, op.Inv.Len)
	}
	n := out.Len()
	return d.launch("moe_combine_rows", cuda.Dim3{X: ceilDiv(n, elemBlock)}, cuda.Dim3{X: elemBlock}, 0,
		cuda.P(out.Ptr), cuda.P(y.Ptr), cuda.P(w.Ptr), cuda.P(op.Inv.Ptr), cuda.I(used), cuda.I(out.Cols), cuda.I(out.Rows), cuda.I(y.Rows))
}
