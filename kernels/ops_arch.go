package kernels

import "math"

// GeGLU writes gelu(gate)·up to dst, with GELU's tanh approximation
// 0.5·g·(1+tanh(√(2/π)·(g+0.044715·g³))) as llama.cpp computes it. dst may
// alias gate or up.
func GeGLU(dst, gate, up []float32) {
	up = up[:len(gate)]
	dst = dst[:len(gate)]
	for i, g := range gate {
		dst[i] = geluTanh(g) * up[i]
	}
}

// geluTanh is GELU by its tanh approximation.
func geluTanh(x float32) float32 {
	const sqrt2OverPi = 0.79788456080286535587989211986876
	const coef = 0.044715
	t := math.Tanh(float64(sqrt2OverPi * x * (1 + coef*x*x)))
	return 0.5 * x * float32(1+t)
}

// SoftCap replaces every value v of x by c·tanh(v/c): values stay within
// (-c, c), near-linear around 0 (gemma2's logit soft-capping). c must be
// positive.
func SoftCap(x []float32, c float32) {
	inv := 1 / c
	for i, v := range x {
		x[i] = c * float32(math.Tanh(float64(v*inv)))
	}
}

// Scale multiplies every value of x by s.
func Scale(x []float32, s float32) {
	for i := range x {
		x[i] *= s
	}
}
