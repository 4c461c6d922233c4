package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// nmse64 is Σ(got-want)²/Σwant² against a float64 reference.
func nmse64(got []float32, want []float64) float64 {
	var num, den float64
	for i, w := range want {
		d := float64(got[i]) - w
		num += d * d
		den += w * w
	}
	return num / den
}

// TestArchOpsAgainstFloat64 checks GeGLU, SoftCap and Scale against
// float64 formulas over values that reach the saturated parts of tanh.
func TestArchOpsAgainstFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 4096
	gate, up := make([]float32, n), make([]float32, n)
	for i := range gate {
		gate[i] = float32(rng.NormFloat64() * 4)
		up[i] = float32(rng.NormFloat64())
	}
	cases := []struct {
		name string
		run  func() []float32
		ref  func(i int) float64
	}{
		{"geglu", func() []float32 {
			dst := make([]float32, n)
			GeGLU(dst, gate, up)
			return dst
		}, func(i int) float64 {
			g := float64(gate[i])
			return 0.5 * g * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(g+0.044715*g*g*g))) * float64(up[i])
		}},
		{"softcap 5", func() []float32 {
			x := append([]float32(nil), gate...)
			SoftCap(x, 5)
			return x
		}, func(i int) float64 { return 5 * math.Tanh(float64(gate[i])/5) }},
		{"softcap 0.5", func() []float32 {
			x := append([]float32(nil), gate...)
			SoftCap(x, 0.5)
			return x
		}, func(i int) float64 { return 0.5 * math.Tanh(float64(gate[i])/0.5) }},
		{"scale", func() []float32 {
			x := append([]float32(nil), gate...)
			Scale(x, 5.656854)
			return x
		}, func(i int) float64 { return float64(gate[i]) * 5.656854 }},
	}
	for _, c := range cases {
		got := c.run()
		want := make([]float64, n)
		for i := range want {
			want[i] = c.ref(i)
		}
		if e := nmse64(got, want); e > 1e-12 {
			t.Errorf("%s: NMSE %.3g against float64, want <= 1e-12", c.name, e)
		}
	}
}
