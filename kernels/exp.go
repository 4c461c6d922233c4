package kernels

import "math"

// expf is exp(x) in float32 with a relative error below 2e-7 (Cephes'
// expf): x = n·ln2 + r with |r| <= ln2/2, a degree-7 polynomial for e^r and
// the power of two put into the exponent bits. Below -87.33 it returns 0,
// above 88.72 +Inf; NaN stays NaN.
func expf(x float32) float32 {
	const (
		hi    = 88.72283905206835
		lo    = -87.33654475055310
		log2e = 1.44269504088896341
		c1    = 0.693359375
		c2    = -2.12194440e-4
	)
	if !(x >= lo) { // x < lo or NaN
		if x != x {
			return x
		}
		return 0
	}
	if x > hi {
		return float32(math.Inf(1))
	}
	n := float32(math.Floor(float64(x*log2e + 0.5)))
	r := x - n*c1 - n*c2
	z := r * r
	y := ((((1.9875691500e-4*r+1.3981999507e-3)*r+8.3334519073e-3)*r+4.1665795894e-2)*r+1.6666665459e-1)*r + 5.0000001201e-1
	y = y*z + r + 1
	// n is in [-126, 128]; 2^128 overflows the exponent, so scale in two
	// steps there.
	ni := int32(n)
	if ni > 127 {
		return y * 2 * math.Float32frombits(uint32(ni-1+127)<<23)
	}
	return y * math.Float32frombits(uint32(ni+127)<<23)
}
