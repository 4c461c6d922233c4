package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestExpf checks expf against math.Exp over its whole range: relative
// error at most 3e-7 (a float32 ulp is 6e-8..1.2e-7), exact 0, Inf and NaN
// at the ends.
func TestExpf(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for i := 0; i < 200000; i++ {
		x := float32(-87.3 + 176*rng.Float64())
		got, want := float64(expf(x)), math.Exp(float64(x))
		if rel := math.Abs(got-want) / want; rel > 3e-7 {
			t.Fatalf("expf(%g) = %g, want %g (relative error %.3g)", x, got, want, rel)
		}
	}
	ends := []struct{ x, want float32 }{
		{0, 1}, {-100, 0}, {float32(math.Inf(-1)), 0}, {100, float32(math.Inf(1))},
	}
	for _, e := range ends {
		if got := expf(e.x); got != e.want {
			t.Errorf("expf(%g) = %g, want %g", e.x, got, e.want)
		}
	}
	if nan := float32(math.NaN()); !math.IsNaN(float64(expf(nan))) {
		t.Error("expf(NaN) is not NaN")
	}
}
