package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"llmserve/gguf"
)

var matTypes = []gguf.Type{
	gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16,
	gguf.TypeQ4_0, gguf.TypeQ4_1, gguf.TypeQ5_0, gguf.TypeQ5_1, gguf.TypeQ8_0,
	gguf.TypeQ2_K, gguf.TypeQ3_K, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K,
}

// Bounds on the NMSE of MatMul against the exact float64 product of the
// dequantized weights.
//
// Float weights: only float32 rounding of the products and sums, ~1e-13.
//
// Quantized weights: the activations are rounded to 8 bits with step
// d = max|x|/127 per block, an error of variance d²/12 per value. For
// Gaussian x the block maximum is about 2.5σ (32 values) or 3σ (256), so the
// relative error variance is (2.5/127)²/12 ≈ 3e-5 or (3/127)²/12 ≈ 5e-5,
// and the NMSE of y is of that order (measured: 3e-5..2e-4 over a few dozen
// outputs; more when the random weights share a large offset). 1e-3 leaves
// room for that spread while a wrong scale, offset or bit position gives an
// NMSE near 1. The sharp check is boundExact below.
const (
	boundFloat = 1e-6
	boundQuant = 1e-3
	// boundExact is the bound against the float64 product of the dequantized
	// weights with the quantized-then-dequantized activations: the integer
	// sums are exact, only float32 scaling and accumulation remain.
	boundExact = 1e-10
)

func isFloat(t gguf.Type) bool {
	return t == gguf.TypeF32 || t == gguf.TypeF16 || t == gguf.TypeBF16
}

// matShapes are the (rows, cols, n) cases, cols being a multiple of the
// block size of the type; rows include counts not divisible by the thread
// counts or the row tile.
func matShapes(t gguf.Type) [][3]int {
	c := t.BlockSize()
	if c == 1 {
		c = 32
	}
	return [][3]int{
		{1, c, 1},
		{67, 2 * c, 1},
		{35, 3 * c, 5},
		{19, 2 * c, 8},
		{130, max(512, 2*c), 2},
	}
}

func TestMatMul(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, threads := range []int{1, 3} {
		p := NewPool(threads)
		defer p.Close()
		for _, ks := range kernelSets {
			for _, typ := range matTypes {
				for _, sh := range matShapes(typ) {
					rows, cols, n := sh[0], sh[1], sh[2]
					name := fmt.Sprintf("%s/%s/%dx%d/n=%d/threads=%d", ks.name, typ, rows, cols, n, threads)
					t.Run(name, func(t *testing.T) {
						w := randMatrix(t, rng, typ, rows, cols)
						wd := refDequant(t, w)
						x := randVec(rng, n*cols)
						y := make([]float32, n*rows)
						if err := matMul(ks, p, w, x, n, y); err != nil {
							t.Fatal(err)
						}
						bound := boundQuant
						if isFloat(typ) {
							bound = boundFloat
						}
						// The quantization-noise bound is an expectation over
						// many outputs; one output alone can be near zero.
						if e := nmse(y, refMatMul(wd, rows, cols, to64(x), n)); e > bound && rows*n >= 64 {
							t.Errorf("NMSE vs float64 product %.3g > %.3g (y[0]=%g)", e, bound, y[0])
						}
						if isFloat(typ) {
							return
						}
						xq := quantizedActs(ks.types[typ].act, x, n, cols)
						if e := nmse(y, refMatMul(wd, rows, cols, xq, n)); e > boundExact {
							t.Errorf("NMSE vs float64 product with 8-bit activations %.3g > %.3g", e, boundExact)
						}
					})
				}
			}
		}
	}
}

// quantizedActs returns x as MatMul sees it after quantizing it to kind k.
func quantizedActs(k actKind, x []float32, n, cols int) []float64 {
	var buf actBuf
	rows := buf.prepare(k, x, n, cols)
	bs := qk8
	if k == actQ8K {
		bs = qkK
	}
	out := make([]float64, 0, len(x))
	for i := range rows {
		rows[i].quantize(k)
		for c := 0; c < cols; c++ {
			out = append(out, float64(rows[i].d[c/bs])*float64(rows[i].q[c]))
		}
	}
	return out
}

// TestActSums checks the block sums stored beside the quantized activations.
func TestActSums(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	x := randVec(rng, 512)
	for _, k := range []actKind{actQ8, actQ8K} {
		var buf actBuf
		r := &buf.prepare(k, x, 1, 512)[0]
		r.quantize(k)
		for c := 0; c < 512; c += 16 {
			s := 0
			for _, q := range r.q[c : c+16] {
				s += int(q)
			}
			if k == actQ8K && int(r.b[c/16]) != s {
				t.Errorf("Q8_K group sum %d = %d, want %d", c/16, r.b[c/16], s)
			}
			if k == actQ8 && c%32 == 0 {
				for _, q := range r.q[c+16 : c+32] {
					s += int(q)
				}
				if want := r.d[c/32] * float32(s); r.s[c/32] != want {
					t.Errorf("Q8_0 block sum %d = %g, want %g", c/32, r.s[c/32], want)
				}
			}
		}
	}
}

func TestMatMulErrors(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	good := make([]byte, 2*34)
	cases := []struct {
		name string
		w    Matrix
		x, y int
		n    int
	}{
		{"short data", Matrix{gguf.TypeQ8_0, 2, 32, good[:40]}, 32, 2, 1},
		{"cols not whole blocks", Matrix{gguf.TypeQ8_0, 2, 16, good}, 32, 2, 1},
		{"unsupported type", Matrix{gguf.TypeIQ2_XXS, 1, 256, make([]byte, 66)}, 256, 1, 1},
		{"short x", Matrix{gguf.TypeQ8_0, 2, 32, good}, 31, 2, 1},
		{"short y", Matrix{gguf.TypeQ8_0, 2, 32, good}, 64, 3, 2},
	}
	for _, c := range cases {
		err := MatMul(p, c.w, make([]float32, c.x), c.n, make([]float32, c.y))
		if err == nil {
			t.Errorf("%s: MatMul returned no error", c.name)
		}
		if c.name == "short data" || c.name == "unsupported type" {
			if _, err := NewMatrix(c.w.Type, c.w.Rows, c.w.Cols, c.w.Data); err == nil {
				t.Errorf("%s: NewMatrix returned no error", c.name)
			}
		}
	}
}

func TestRow(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, typ := range matTypes {
		t.Run(typ.String(), func(t *testing.T) {
			cols := max(256, typ.BlockSize())
			w := randMatrix(t, rng, typ, 5, cols)
			wd := refDequant(t, w)
			dst := make([]float32, cols)
			for r := 0; r < w.Rows; r++ {
				if err := Row(w, r, dst); err != nil {
					t.Fatal(err)
				}
				for c, v := range dst {
					if float64(v) != wd[r*cols+c] {
						t.Fatalf("row %d col %d = %g, want %g", r, c, v, wd[r*cols+c])
					}
				}
			}
			if err := Row(w, w.Rows, dst); err == nil {
				t.Error("Row past the end returned no error")
			}
		})
	}
}

// TestKernelSetsAgree compares every kernel set with the portable one on the
// same quantized activations: the integer sums are exact in both, so they
// may differ only by float32 rounding of the scaling and accumulation.
func TestKernelSetsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	p := NewPool(2)
	defer p.Close()
	ref := kernelSets[len(kernelSets)-1]
	for _, ks := range kernelSets[:len(kernelSets)-1] {
		for _, typ := range matTypes {
			rows, cols, n := 37, 4*max(256, typ.BlockSize()), 6
			w := randMatrix(t, rng, typ, rows, cols)
			x := randVec(rng, n*cols)
			got, want := make([]float32, n*rows), make([]float32, n*rows)
			if err := matMul(ks, p, w, x, n, got); err != nil {
				t.Fatal(err)
			}
			if err := matMul(ref, p, w, x, n, want); err != nil {
				t.Fatal(err)
			}
			if e := nmse(got, to64(want)); e > boundExact {
				t.Errorf("%s vs %s, %s: NMSE %.3g > %.3g (%g vs %g)", ks.name, ref.name, typ, e, boundExact, got[0], want[0])
			}
		}
	}
}

// TestMatMulNoAlloc checks that a decode-step MatMul allocates nothing once
// the pool's buffers have grown.
func TestMatMulNoAlloc(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	p := NewPool(2)
	defer p.Close()
	w := randMatrix(t, rng, gguf.TypeQ4_K, 64, 512)
	x, y := randVec(rng, 512), make([]float32, 64)
	if err := MatMul(p, w, x, 1, y); err != nil {
		t.Fatal(err)
	}
	if a := testing.AllocsPerRun(20, func() { _ = MatMul(p, w, x, 1, y) }); a != 0 {
		t.Errorf("MatMul allocates %.1f times per call", a)
	}
}

// TestMatMulDeterministic checks that the result does not depend on the
// number of threads: each output is one dot product computed by one thread,
// so results are bit-identical, which golden tests rely on.
func TestMatMulDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	p1, p3 := NewPool(1), NewPool(3)
	defer p1.Close()
	defer p3.Close()
	for _, typ := range []gguf.Type{gguf.TypeF32, gguf.TypeQ8_0, gguf.TypeQ4_K, gguf.TypeQ6_K} {
		w := randMatrix(t, rng, typ, 301, 512)
		x := randVec(rng, 6*512)
		y1, y3 := make([]float32, 6*301), make([]float32, 6*301)
		if err := MatMul(p1, w, x, 6, y1); err != nil {
			t.Fatal(err)
		}
		if err := MatMul(p3, w, x, 6, y3); err != nil {
			t.Fatal(err)
		}
		for i := range y1 {
			if y1[i] != y3[i] {
				t.Fatalf("%s: y[%d] = %g with 1 thread, %g with 3", typ, i, y1[i], y3[i])
			}
		}
	}
}

// TestQuantizeSets checks that every kernel set quantizes activations
// exactly as the portable quantizer does, on rows with a zero block and
// values of very different sizes.
func TestQuantizeSets(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 30))
	const cols = 1024
	x := randVec(rng, 2*cols)
	for i := range x {
		x[i] *= float32(math.Pow(10, 4*rng.Float64()-2))
	}
	clear(x[256:512])
	for _, k := range []actKind{actQ8, actQ8K} {
		var want actBuf
		wr := want.prepare(k, x, 2, cols)
		for i := range wr {
			wr[i].quantize(k)
		}
		for _, ks := range kernelSets {
			var got actBuf
			gr := got.prepare(k, x, 2, cols)
			for i := range gr {
				ks.quantize(&gr[i], k)
			}
			for i := range gr {
				g, w := &gr[i], &wr[i]
				for c := range w.q {
					if g.q[c] != w.q[c] {
						t.Fatalf("%s kind %d row %d: q[%d] = %d, want %d", ks.name, k, i, c, g.q[c], w.q[c])
					}
				}
				for b := range w.d {
					if g.d[b] != w.d[b] || k == actQ8 && g.s[b] != w.s[b] {
						t.Fatalf("%s kind %d row %d block %d: d, s = %g, %g, want %g, %g", ks.name, k, i, b, g.d[b], sOf(g, b), w.d[b], sOf(w, b))
					}
				}
				if k == actQ8K {
					for c := range w.b {
						if g.b[c] != w.b[c] {
							t.Fatalf("%s row %d: group sum %d = %d, want %d", ks.name, i, c, g.b[c], w.b[c])
						}
					}
				}
			}
		}
	}
}

func sOf(r *actRow, b int) float32 {
	if r.s == nil {
		return 0
	}
	return r.s[b]
}
