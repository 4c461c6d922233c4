package kernels

import (
	"math"

	"llmserve/gguf"
)

// Portable dot products of one float weight row with a float32 row.

func dotF32Go(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func axpyGo(y []float32, a float32, x []float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] += a * x[i]
	}
}

func dotsGo(out, q, k []float32, stride int) {
	for p := range out {
		out[p] = dotF32Go(q, k[p*stride:p*stride+len(q)])
	}
}

func axpysGo(out, w, v []float32, stride int) {
	for p, a := range w {
		axpyGo(out, a, v[p*stride:p*stride+len(out)])
	}
}

func dotF32Row(w []byte, x *actRow) float32 {
	var s0, s1 float32
	f := x.f
	i := 0
	for ; i+2 <= len(f); i += 2 {
		s0 += math.Float32frombits(uint32(w[4*i])|uint32(w[4*i+1])<<8|uint32(w[4*i+2])<<16|uint32(w[4*i+3])<<24) * f[i]
		s1 += math.Float32frombits(uint32(w[4*i+4])|uint32(w[4*i+5])<<8|uint32(w[4*i+6])<<16|uint32(w[4*i+7])<<24) * f[i+1]
	}
	for ; i < len(f); i++ {
		s0 += math.Float32frombits(uint32(w[4*i])|uint32(w[4*i+1])<<8|uint32(w[4*i+2])<<16|uint32(w[4*i+3])<<24) * f[i]
	}
	return s0 + s1
}

func dotF16Row(w []byte, x *actRow) float32 {
	var s0, s1 float32
	f := x.f
	i := 0
	for ; i+2 <= len(f); i += 2 {
		s0 += gguf.FP16ToFP32(le16(w[2*i:])) * f[i]
		s1 += gguf.FP16ToFP32(le16(w[2*i+2:])) * f[i+1]
	}
	for ; i < len(f); i++ {
		s0 += gguf.FP16ToFP32(le16(w[2*i:])) * f[i]
	}
	return s0 + s1
}

func dotBF16Row(w []byte, x *actRow) float32 {
	var s0, s1 float32
	f := x.f
	i := 0
	for ; i+2 <= len(f); i += 2 {
		s0 += gguf.BF16ToFP32(le16(w[2*i:])) * f[i]
		s1 += gguf.BF16ToFP32(le16(w[2*i+2:])) * f[i+1]
	}
	for ; i < len(f); i++ {
		s0 += gguf.BF16ToFP32(le16(w[2*i:])) * f[i]
	}
	return s0 + s1
}
