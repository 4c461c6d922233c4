//go:build cuda

package kernels

import (
	"fmt"

	"llmserve/internal/cuda"
)

const elemBlock = 256 // threads per block of the element-wise kernels

// RMSNorm writes x[r, :] / sqrt(mean(x[r, :]²) + eps) * w to out[r, :]; w is
// 1 × x.Cols; out may be x.
func (d *Device) RMSNorm(x, w, out DevF32, eps float32) error {
	if out.Rows != x.Rows || out.Cols != x.Cols || w.Len() != x.Cols || x.Rows < 1 {
		return fmt.Errorf("kernels: rms_norm: x %d×%d, w %d values, out %d×%d", x.Rows, x.Cols, w.Len(), out.Rows, out.Cols)
	}
	return d.launch("rms_norm", cuda.Dim3{X: x.Rows}, cuda.Dim3{X: normThreads(x.Cols)}, 0,
		cuda.P(x.Ptr), cuda.P(w.Ptr), cuda.P(out.Ptr), cuda.I(x.Cols), cuda.F(eps))
}

// RMSNormAdd adds RMSNorm(x)·w to y, row by row (x and y distinct, of one
// shape): the bits of RMSNorm into a buffer, then Add.
func (d *Device) RMSNormAdd(x, w, y DevF32, eps float32) error {
	if y.Rows != x.Rows || y.Cols != x.Cols || w.Len() != x.Cols || x.Rows < 1 || x.Ptr == y.Ptr {
		return fmt.Errorf("kernels: rms_norm_add: x %d×%d, w %d values, y %d×%d (distinct: %v)", x.Rows, x.Cols, w.Len(), y.Rows, y.Cols, x.Ptr != y.Ptr)
	}
	return d.launch("rms_norm_add", cuda.Dim3{X: x.Rows}, cuda.Dim3{X: normThreads(x.Cols)}, 0,
		cuda.P(x.Ptr), cuda.P(w.Ptr), cuda.P(y.Ptr), cuda.I(x.Cols), cuda.F(eps))
}

// normThreads is the block size of the norm kernels for rows of n values:
// enough threads that each holds at most rmsHold of them (rms_row reads
// such a row once, every load of a thread in flight at once; a Gemma-2-9B
// norm of 3584 values took ~12 µs at 256 threads, each looping over 14),
// at most 1024.
func normThreads(n int) int {
	return min(1024, 32*ceilDiv(ceilDiv(n, rmsHold), 32))
}

// rmsHold is RMS_HOLD of ops.cu: the values of a row each thread of the
// norm kernels holds in registers.
const rmsHold = 4

// AddBias adds bias (1 × y.Cols) to every row of y.
func (d *Device) AddBias(y, bias DevF32) error {
	if bias.Len() != y.Cols || y.Len() < 1 {
		return fmt.Errorf("kernels: add_bias: y %d×%d, bias %d values", y.Rows, y.Cols, bias.Len())
	}
	n := y.Len()
	return d.launch("add_bias", cuda.Dim3{X: ceilDiv(n, elemBlock)}, cuda.Dim3{X: elemBlock}, 0,
		cuda.P(y.Ptr), cuda.P(bias.Ptr), cuda.I(y.Cols), cuda.I(n))
}

// Add adds x to y element-wise (the residual connection).
func (d *Device) Add(y, x DevF32) error {
	if x.Rows != y.Rows || x.Cols != y.Cols || y.Len() < 1 {
		return fmt.Errorf("kernels: add: y %d×%d, x %d×%d", y.Rows, y.Cols, x.Rows, x.Cols)
	}
	n := y.Len()
	return d.launch("add", cuda.Dim3{X: ceilDiv(n, elemBlock)}, cuda.Dim3{X: elemBlock}, 0,
		cuda.P(y.Ptr), cuda.P(x.Ptr), cuda.I(n))
}

// SwiGLU writes silu(gate) * up to out, element-wise; out may be gate or up.
func (d *Device) SwiGLU(gate, up, out DevF32) error {
	if gate.Rows != up.Rows || gate.Cols != up.Cols || out.Rows != gate.Rows || out.Cols != gate.Cols || gate.Len() < 1 {
		return fmt.Errorf("kernels: swiglu: gate %d×%d, up %d×%d, out %d×%d", gate.Rows, gate.Cols, up.Rows, up.Cols, out.Rows, out.Cols)
	}
	n := gate.Len()
	return d.launch("swiglu", cuda.Dim3{X: ceilDiv(n, elemBlock)}, cuda.Dim3{X: elemBlock}, 0,
		cuda.P(gate.Ptr), cuda.P(up.Ptr), cuda.P(out.Ptr), cuda.I(n))
}

// RopeParams describes a rotary position embedding.
type RopeParams struct {
	Heads, HeadDim int
	Dim            int     // rotated values per head (≤ HeadDim, even)
	Base           float32 // frequency base
	Neox           bool    // pairs (i, i+Dim/2) instead of (2i, 2i+1)
	Factors        DevF32  // Dim/2 frequency divisors (llama3 rope_freqs), or zero Ptr for none
	Scale          float32 // the rotated values' multiplier (LongRoPE's attention factor); 0 is 1
}

// mscale is the rotated values' multiplier the kernels take.
func (r RopeParams) mscale() float32 {
	if r.Scale == 0 {
		return 1
	}
	return r.Scale
}
