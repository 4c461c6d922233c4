//go:build cuda

package kernels

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"llmserve/internal/cuda"
)

// TestCUDARMSNorm checks rms_norm against the f64 norm and rms_norm_add
// against rms_norm then add, bit for bit, for rows that each thread holds
// in registers (up to 4096 values, 3584 Gemma-2-9B's) and longer rows read
// twice (4097, 6000).
func TestCUDARMSNorm(t *testing.T) {
	for _, n := range []int{8, 64, 200, 3584, 4096, 4097, 6000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(2, uint64(n)))
			g := newBuffers(t)
			rows, eps := 5, float32(1e-5)
			x, w := randF32(rng, rows*n), randF32(rng, n)
			out := g.poisoned(rows, n)
			if err := dev.RMSNorm(g.f32(x, rows, n), g.f32(w, 1, n), out, eps); err != nil {
				t.Fatal(err)
			}
			want := make([]float64, rows*n)
			for r := 0; r < rows; r++ {
				var ss float64
				for _, v := range x[r*n : (r+1)*n] {
					ss += float64(v) * float64(v)
				}
				s := 1 / math.Sqrt(ss/float64(n)+float64(eps))
				for i := 0; i < n; i++ {
					want[r*n+i] = float64(x[r*n+i]) * s * float64(w[i])
				}
			}
			checkNMSE(t, "rms_norm", read(t, out), want, 1e-6)

			// RMSNormAdd: the bits of the norm into a buffer, then the add.
			y0 := randF32(rng, rows*n)
			y, sep := g.f32(y0, rows, n), g.f32(y0, rows, n)
			if err := dev.RMSNormAdd(g.f32(x, rows, n), g.f32(w, 1, n), y, eps); err != nil {
				t.Fatal(err)
			}
			if err := dev.Add(sep, out); err != nil {
				t.Fatal(err)
			}
			got, two := read(t, y), read(t, sep)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(two[i]) {
					t.Fatalf("rms_norm_add value %d: %g, norm then add %g", i, got[i], two[i])
				}
			}
			if err := dev.RMSNormAdd(y, g.f32(w, 1, n), y, eps); err == nil {
				t.Error("rms_norm_add in place: no error")
			}
		})
	}
}

func TestElementwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	rows, cols := 3, 1000
	a, bias, c := randF32(rng, rows*cols), randF32(rng, cols), randF32(rng, rows*cols)
	cases := []struct {
		name string
		run  func(g *gpuBuffers) (DevF32, error)
		want func(i int) float64
	}{
		{"add_bias", func(g *gpuBuffers) (DevF32, error) {
			y := g.f32(a, rows, cols)
			return y, dev.AddBias(y, g.f32(bias, 1, cols))
		}, func(i int) float64 { return float64(a[i]) + float64(bias[i%cols]) }},
		{"add", func(g *gpuBuffers) (DevF32, error) {
			y := g.f32(a, rows, cols)
			return y, dev.Add(y, g.f32(c, rows, cols))
		}, func(i int) float64 { return float64(a[i]) + float64(c[i]) }},
		{"swiglu", func(g *gpuBuffers) (DevF32, error) {
			out := g.poisoned(rows, cols)
			return out, dev.SwiGLU(g.f32(a, rows, cols), g.f32(c, rows, cols), out)
		}, func(i int) float64 { x := float64(a[i]); return x / (1 + math.Exp(-x)) * float64(c[i]) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newBuffers(t)
			out, err := tc.run(g)
			if err != nil {
				t.Fatal(err)
			}
			want := make([]float64, rows*cols)
			for i := range want {
				want[i] = tc.want(i)
			}
			checkNMSE(t, tc.name, read(t, out), want, 1e-6)
		})
	}
}

// TestRopeStore checks the fused head norm, rotation and cache write
// against the f64 reference: query heads rotated in place, key heads
// rotated into the cache, value heads copied, padding tokens writing
// nothing.
func TestRopeStore(t *testing.T) {
	cases := []struct {
		headDim, dim int
		neox         bool
		factors      bool
		norm         bool
		base         float32
		scale        float32 // RopeParams.Scale (0: none)
	}{
		{64, 64, false, false, false, 10000, 0},
		{64, 64, true, false, true, 1e6, 0},
		{128, 128, false, true, false, 500000, 0},
		{128, 64, true, false, true, 10000, 0},
		{8, 8, false, false, false, 10000, 0},
		{96, 96, true, true, false, 10000, 1.190238}, // Phi-3.5's LongRoPE
		{128, 64, false, false, false, 10000, 0.5},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("hd%d_dim%d_neox%v_ff%v_norm%v_scale%g", c.headDim, c.dim, c.neox, c.factors, c.norm, c.scale), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(4, uint64(c.headDim+c.dim)))
			g := newBuffers(t)
			heads, kvHeads, ctx, maxSeqs := 4, 2, 4096, 2
			pos := []int32{0, 1, 17, 255, 1000, 4095, 3}
			seq := []int32{0, 1, 0, 1, 0, 1, -1}
			b, kvdim := len(pos), kvHeads*c.headDim
			q, k, v := randF32(rng, b*heads*c.headDim), randF32(rng, b*kvdim), randF32(rng, b*kvdim)
			kc, vc := g.poisoned(maxSeqs*ctx, kvdim), g.poisoned(maxSeqs*ctx, kvdim)
			cache := DevKVCache{K: kc.Ptr, V: vc.Ptr, MaxSeqs: maxSeqs, Ctx: ctx, KVHeads: kvHeads, HeadDim: c.headDim}
			r := RopeParams{Heads: heads, HeadDim: c.headDim, Dim: c.dim, Base: c.base, Neox: c.neox, Scale: c.scale}
			var ff, qn, kn []float32
			if c.factors {
				ff = make([]float32, c.dim/2)
				for i := range ff {
					ff[i] = 1 + 7*rng.Float32()
				}
				r.Factors = g.f32(ff, 1, len(ff))
			}
			op := RopeStoreOp{Cache: cache, Q: g.f32(q, b, heads*c.headDim), K: g.f32(k, b, kvdim), V: g.f32(v, b, kvdim),
				Eps: 1e-6, Pos: g.i32(pos), Seq: g.i32(seq), Rope: r}
			if c.norm {
				qn, kn = randF32(rng, c.headDim), randF32(rng, c.headDim)
				op.QNorm, op.KNorm = g.f32(qn, 1, c.headDim), g.f32(kn, 1, c.headDim)
			}
			if err := dev.RopeStore(op); err != nil {
				t.Fatal(err)
			}
			// rotate normalizes and rotates one head of token tok in f64.
			rotate := func(head []float32, w []float32, tok int) []float64 {
				v := make([]float64, len(head))
				var ss float64
				for _, x := range head {
					ss += float64(x) * float64(x)
				}
				s := 1 / math.Sqrt(ss/float64(len(head))+1e-6)
				for i, x := range head {
					v[i] = float64(x)
					if w != nil {
						v[i] *= s * float64(w[i])
					}
				}
				refRoPE(v, c.dim, float64(pos[tok]), float64(c.base), c.neox, ff)
				if c.scale != 0 {
					for i := range v[:c.dim] {
						v[i] *= float64(c.scale)
					}
				}
				return v
			}
			var wantQ []float64
			for tok := 0; tok < b; tok++ {
				for h := 0; h < heads; h++ {
					wantQ = append(wantQ, rotate(q[(tok*heads+h)*c.headDim:(tok*heads+h+1)*c.headDim], qn, tok)...)
				}
			}
			// f32 angles at positions up to 4095 are off by ~pos·2⁻²⁴.
			checkNMSE(t, "rope_store q", read(t, op.Q), wantQ, 1e-6)
			gotK, gotV := read(t, kc), read(t, vc)
			var rowsK, rowsV []float32
			var wantK, wantV []float64
			for tok := 0; tok < b; tok++ {
				at := (int(seq[tok])*ctx + int(pos[tok])) * kvdim
				if seq[tok] < 0 {
					continue
				}
				rowsK, rowsV = append(rowsK, gotK[at:at+kvdim]...), append(rowsV, gotV[at:at+kvdim]...)
				for h := 0; h < kvHeads; h++ {
					wantK = append(wantK, rotate(k[tok*kvdim+h*c.headDim:tok*kvdim+(h+1)*c.headDim], kn, tok)...)
				}
				wantV = append(wantV, to64(v[tok*kvdim:(tok+1)*kvdim])...)
			}
			checkNMSE(t, "rope_store cache K", rowsK, wantK, 1e-6)
			checkNMSE(t, "rope_store cache V", rowsV, wantV, 0)
			written := 0
			for _, x := range gotK {
				if !math.IsNaN(float64(x)) {
					written++
				}
			}
			if want := (b - 1) * kvdim; written != want {
				t.Errorf("rope_store wrote %d cache values, want %d (the padding token writes nothing)", written, want)
			}
		})
	}
}

func TestLaunchError(t *testing.T) {
	g := newBuffers(t)
	y := g.poisoned(1, 8)
	err := dev.launch("add", cuda.Dim3{X: 1}, cuda.Dim3{X: 4096}, 0, cuda.P(y.Ptr), cuda.P(y.Ptr), cuda.I(8))
	var ce *cuda.Error
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "add") || !strings.HasPrefix(ce.Name, "CUDA_ERROR_") {
		t.Fatalf("launch with 4096 threads per block: got %v, want a *cuda.Error naming kernel add and a CUDA_ERROR_ code", err)
	}
	if err := dev.Sync(); err != nil {
		t.Fatalf("refused launch left the stream in error: %v", err)
	}
}
