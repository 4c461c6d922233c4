package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func TestRMSNorm(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{1, 64, 2049} {
		x, w := randVec(rng, n), randVec(rng, n)
		var ss float64
		for _, v := range x {
			ss += float64(v) * float64(v)
		}
		eps := 1e-5
		want := make([]float64, n)
		for i := range x {
			want[i] = float64(x[i]) * float64(w[i]) / math.Sqrt(ss/float64(n)+eps)
		}
		dst := make([]float32, n)
		RMSNorm(dst, x, w, float32(eps))
		if e := nmse(dst, want); e > 1e-12 {
			t.Errorf("n=%d: NMSE %.3g", n, e)
		}
		RMSNorm(x, x, w, float32(eps)) // aliased
		if e := nmse(x, want); e > 1e-12 {
			t.Errorf("n=%d aliased: NMSE %.3g", n, e)
		}
	}
}

// refRoPE rotates the first rot values of head v in place by position pos
// in f64: pairs (2i, 2i+1), or (i, i+rot/2) with neox, by the angle
// pos·base^(-2i/rot), divided by ff[i] when ff is given.
func refRoPE(v []float64, rot int, pos, base float64, neox bool, ff []float32) {
	for i := 0; i < rot/2; i++ {
		theta := pos / math.Pow(base, float64(2*i)/float64(rot))
		if ff != nil {
			theta /= float64(ff[i])
		}
		a, b := 2*i, 2*i+1
		if neox {
			a, b = i, i+rot/2
		}
		x0, x1 := v[a], v[b]
		v[a] = x0*math.Cos(theta) - x1*math.Sin(theta)
		v[b] = x0*math.Sin(theta) + x1*math.Cos(theta)
	}
}

func TestRoPE(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	cases := []struct {
		heads, dim, rot, pos int
		neox, factors        bool
	}{
		{4, 64, 64, 0, false, false},
		{4, 64, 64, 17, false, false},
		{3, 64, 32, 1000, false, false},
		{2, 128, 128, 4095, true, false},
		{2, 128, 64, 77, true, false},
		{2, 64, 64, 300, false, true},
		{2, 64, 64, 300, true, true},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%+v", c), func(t *testing.T) {
			x := randVec(rng, c.heads*c.dim)
			base := 500000.0
			var ff []float32
			if c.factors {
				ff = make([]float32, c.rot/2)
				for i := range ff {
					ff[i] = float32(1 + 7*rng.Float64())
				}
			}
			want := to64(x)
			for h := 0; h < c.heads; h++ {
				refRoPE(want[h*c.dim:], c.rot, float64(c.pos), base, c.neox, ff)
			}
			RoPE(x, c.heads, c.dim, c.rot, c.pos, float32(base), c.neox, ff)
			if e := nmse(x, want); e > 1e-12 {
				t.Errorf("NMSE %.3g", e)
			}
		})
	}
}

func TestSoftmax(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{1, 7, 1000} {
		x := randVec(rng, n)
		for i := range x {
			x[i] *= 10
		}
		m := math.Inf(-1)
		for _, v := range x {
			m = math.Max(m, float64(v))
		}
		want := make([]float64, n)
		var sum float64
		for i, v := range x {
			want[i] = math.Exp(float64(v) - m)
			sum += want[i]
		}
		for i := range want {
			want[i] /= sum
		}
		Softmax(x)
		if e := nmse(x, want); e > 1e-12 {
			t.Errorf("n=%d: NMSE %.3g", n, e)
		}
	}
}

func TestSwiGLU(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	g, u := randVec(rng, 999), randVec(rng, 999)
	want := make([]float64, len(g))
	for i := range g {
		gv := float64(g[i])
		want[i] = gv / (1 + math.Exp(-gv)) * float64(u[i])
	}
	SwiGLU(g, g, u)
	if e := nmse(g, want); e > 1e-12 {
		t.Errorf("NMSE %.3g", e)
	}
}

func TestAdd(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	a, b := randVec(rng, 33), randVec(rng, 33)
	want := make([]float64, len(a))
	for i := range a {
		want[i] = float64(a[i]) + float64(b[i])
	}
	Add(a, b)
	if e := nmse(a, want); e > 1e-13 {
		t.Errorf("NMSE %.3g", e)
	}
}

func TestDot(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for _, ks := range kernelSets {
		for _, n := range []int{0, 1, 7, 8, 31, 64, 100, 4099} {
			a, b := randVec(rng, n), randVec(rng, n+3)
			var want float64
			for i := range a {
				want += float64(a[i]) * float64(b[i])
			}
			got := ks.dot(a, b)
			// Relative to the sum of |a·b|, float32 accumulation errs by
			// about sqrt(n)·2⁻²⁴; 1e-6 is far above that for these sizes.
			var mag float64
			for i := range a {
				mag += math.Abs(float64(a[i]) * float64(b[i]))
			}
			if d := math.Abs(float64(got) - want); d > 1e-6*mag+1e-30 {
				t.Errorf("%s n=%d: Dot = %g, want %g", ks.name, n, got, want)
			}
		}
	}
}

func TestAxpy(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	for _, ks := range kernelSets {
		for _, n := range []int{0, 1, 7, 8, 31, 64, 100, 4099} {
			y, x := randVec(rng, n), randVec(rng, n+2)
			a := float32(rng.NormFloat64())
			want := make([]float64, n)
			for i := range want {
				want[i] = float64(y[i]) + float64(a)*float64(x[i])
			}
			ks.axpy(y, a, x)
			if e := nmse(y, want); e > 1e-13 {
				t.Errorf("%s n=%d: NMSE %.3g", ks.name, n, e)
			}
		}
	}
}

func TestDotsAxpys(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	cases := []struct{ hd, stride, n int }{
		{64, 512, 1}, {64, 512, 7}, {128, 1024, 33}, {64, 64, 9}, {8, 24, 5}, {72, 100, 6}, {12, 12, 3}, {64, 512, 0},
	}
	for _, ks := range kernelSets {
		for _, c := range cases {
			q := randVec(rng, c.hd)
			kv := randVec(rng, max(0, (c.n-1)*c.stride+c.hd))
			out := make([]float32, c.n)
			ks.dots(out, q, kv, c.stride)
			want := make([]float64, c.n)
			for p := range want {
				for i := 0; i < c.hd; i++ {
					want[p] += float64(q[i]) * float64(kv[p*c.stride+i])
				}
			}
			if e := nmse(out, want); e > 1e-12 {
				t.Errorf("%s dots %+v: NMSE %.3g", ks.name, c, e)
			}
			acc := randVec(rng, c.hd)
			wsum := to64(acc)
			for p := 0; p < c.n; p++ {
				for i := 0; i < c.hd; i++ {
					wsum[i] += float64(out[p]) * float64(kv[p*c.stride+i])
				}
			}
			ks.axpys(acc, out, kv, c.stride)
			if e := nmse(acc, wsum); e > 1e-12 {
				t.Errorf("%s axpys %+v: NMSE %.3g", ks.name, c, e)
			}
		}
	}
}
