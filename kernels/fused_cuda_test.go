//go:build cuda

package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"llmserve/gguf"
)

// refQ8 rounds x to 8 bits in blocks of 32 values as the GPU kernels do
// for quantized weights (fused.cuh, q8_quad), in the same float32 steps, and
// returns the values the kernels multiply by.
func refQ8(x []float32) []float32 {
	out := make([]float32, len(x))
	for b := 0; b < len(x); b += 32 {
		blk := x[b:min(b+32, len(x))]
		var amax float32
		for _, v := range blk {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		d := amax / 127
		var id float32
		if amax > 0 {
			id = 127 / amax
		}
		for i, v := range blk {
			out[b+i] = d * float32(math.RoundToEven(float64(v*id)))
		}
	}
	return out
}

// refRMSNorm normalizes each row of x (rows of cols) and scales it by w.
func refRMSNorm(x, w []float32, cols int, eps float32) []float32 {
	out := make([]float32, len(x))
	for r := 0; r < len(x); r += cols {
		var ss float64
		for _, v := range x[r : r+cols] {
			ss += float64(v) * float64(v)
		}
		s := float32(1 / math.Sqrt(ss/float64(cols)+float64(eps)))
		for i, v := range x[r : r+cols] {
			out[r+i] = v * s * w[i]
		}
	}
	return out
}

// refProduct is W·x in f64 for every row of x (B × cols), B × rows.
func refProduct(typ gguf.Type, data []byte, rows, cols int, x []float32) []float64 {
	rb, _ := typ.RowBytes(int64(cols))
	B := len(x) / cols
	out := make([]float64, B*rows)
	for r := 0; r < rows; r++ {
		wr := refDequantRow(typ, data[int64(r)*rb:int64(r+1)*rb], cols)
		for b := 0; b < B; b++ {
			var s float64
			for k, v := range wr {
				s += v * float64(x[b*cols+k])
			}
			out[b*rows+r] = s
		}
	}
	return out
}

// TestMatVecFused checks every fusion (RMSNorm of the input, three
// matrices of mixed types with biases, the residual add, gate/up with
// SwiGLU and with GELU) against the f64 reference, on the 8-bit kernels (one warp or
// several per row pair), the 16-bit float one (mvh_1, at B=1) and the f32
// ones (float and other quantized types, and mixes of types the 8-bit
// kernels split).
func TestMatVecFused(t *testing.T) {
	type mix struct {
		name  string
		types [3]gguf.Type
		cols  int
	}
	mixes := []mix{
		{"kquants", [3]gguf.Type{gguf.TypeQ4_K, gguf.TypeQ4_K, gguf.TypeQ6_K}, 512},
		{"q5k-q8", [3]gguf.Type{gguf.TypeQ5_K, gguf.TypeQ8_0, gguf.TypeQ4_0}, 256},
		{"legacy", [3]gguf.Type{gguf.TypeQ8_0, gguf.TypeQ8_0, gguf.TypeQ8_0}, 448},
		{"long-rows", [3]gguf.Type{gguf.TypeQ4_K, gguf.TypeQ6_K, gguf.TypeQ8_0}, 8192}, // several warps per row pair
		{"q5_0", [3]gguf.Type{gguf.TypeQ5_0, gguf.TypeQ5_0, gguf.TypeQ5_0}, 448},
		{"f16", [3]gguf.Type{gguf.TypeF16, gguf.TypeF16, gguf.TypeF16}, 448},
		{"f16-tiles", [3]gguf.Type{gguf.TypeF16, gguf.TypeF16, gguf.TypeF16}, 1280},    // mvh_1 at B=1
		{"bf16-tiles", [3]gguf.Type{gguf.TypeBF16, gguf.TypeBF16, gguf.TypeBF16}, 768}, // mvh_1 at B=1
		{"f16-long", [3]gguf.Type{gguf.TypeF16, gguf.TypeF16, gguf.TypeF16}, 8192},     // mvh_1, several warps per row pair
		{"f32-odd", [3]gguf.Type{gguf.TypeF32, gguf.TypeF32, gguf.TypeF32}, 172},
	}
	rows := [3]int{64, 32, 30}
	for _, mx := range mixes {
		for _, B := range []int{1, 3, 8, 13} {
			t.Run(fmt.Sprintf("%s/B%d", mx.name, B), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(B), uint64(mx.cols)))
				g := newBuffers(t)
				cols := mx.cols
				x := randF32(rng, B*cols)
				norm := randF32(rng, cols)
				xd := g.f32(x, B, cols)
				nx := refRMSNorm(x, norm, cols, 1e-5)
				if !isFloatType(mx.types[0]) {
					nx = refQ8(nx)
				}
				var segs []MatVecSeg
				var want [][]float64
				for i, typ := range mx.types {
					data := randomRows(rng, typ, rows[i], cols)
					bias := randF32(rng, rows[i])
					segs = append(segs, MatVecSeg{
						W: g.matrix(typ, data, rows[i], cols, false),
						Y: g.poisoned(B, rows[i]), Bias: g.f32(bias, 1, rows[i]),
					})
					w := refProduct(typ, data, rows[i], cols, nx)
					for j := range w {
						w[j] += float64(bias[j%rows[i]])
					}
					want = append(want, w)
				}
				if err := dev.MatVecFused(MatVecOp{Segs: segs, X: xd, Norm: g.f32(norm, 1, cols), Eps: 1e-5}); err != nil {
					t.Fatal(err)
				}
				for i := range segs {
					checkNMSE(t, fmt.Sprintf("norm+qkv segment %d", i), read(t, segs[i].Y), want[i], 1e-6)
				}

				// The residual add: y += W·x, into the first segment's output.
				base := read(t, segs[0].Y)
				acc := MatVecOp{Segs: []MatVecSeg{{W: segs[0].W, Y: segs[0].Y}}, X: xd, Accumulate: true}
				if err := dev.MatVecFused(acc); err != nil {
					t.Fatal(err)
				}
				xin := x
				if !isFloatType(mx.types[0]) {
					xin = refQ8(x)
				}
				data0 := readBytes(t, segs[0].W)
				wantAcc := refProduct(mx.types[0], data0, rows[0], cols, xin)
				for j := range wantAcc {
					wantAcc[j] += float64(base[j])
				}
				checkNMSE(t, "accumulate", read(t, segs[0].Y), wantAcc, 1e-6)

				// Gate and up with SwiGLU and GELU: the first two matrices
				// share a shape when cut to the same rows.
				upData := randomRows(rng, mx.types[1], rows[0], cols)
				upW := g.matrix(mx.types[1], upData, rows[0], cols, false)
				for _, act := range []GLUAct{GLUSiLU, GLUGELUTanh} {
					gate := MatVecSeg{W: segs[0].W, Y: g.poisoned(B, rows[0])}
					up := MatVecSeg{W: upW, Y: g.poisoned(B, rows[0])}
					if err := dev.MatVecFused(MatVecOp{Segs: []MatVecSeg{gate, up}, X: xd, Norm: g.f32(norm, 1, cols), Eps: 1e-5, GLU: true, Act: act}); err != nil {
						t.Fatal(err)
					}
					gw := refProduct(mx.types[0], data0, rows[0], cols, nx)
					uw := refProduct(mx.types[1], upData, rows[0], cols, nx)
					f := refSiLU
					if act == GLUGELUTanh {
						f = refGELUTanh
					}
					for j := range gw {
						gw[j] = f(gw[j]) * uw[j]
					}
					checkNMSE(t, fmt.Sprintf("glu act %d", act), read(t, gate.Y), gw, 1e-6)
				}
			})
		}
	}
}

// TestMatVecBatchConsistent checks that a row of x gives the same bits
// alone and inside batches of 3 and 13 on the 8-bit kernels: each column
// is normalized, quantized and summed alike whatever the batch.
func TestMatVecBatchConsistent(t *testing.T) {
	for _, typ := range mvqTypes {
		t.Run(typ.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, uint64(typ)))
			g := newBuffers(t)
			rows, cols := 96, 4096
			data := randomRows(rng, typ, rows, cols)
			w := g.matrix(typ, data, rows, cols, false)
			x := randF32(rng, 13*cols)
			norm := g.f32(randF32(rng, cols), 1, cols)
			alone := make([][]float32, 13)
			for b := range alone {
				one := g.poisoned(1, rows)
				if err := dev.MatVecFused(MatVecOp{Segs: []MatVecSeg{{W: w, Y: one}}, X: g.f32(x[b*cols:(b+1)*cols], 1, cols), Norm: norm, Eps: 1e-6}); err != nil {
					t.Fatal(err)
				}
				alone[b] = read(t, one)
			}
			for _, B := range []int{3, 13} {
				all := g.poisoned(B, rows)
				if err := dev.MatVecFused(MatVecOp{Segs: []MatVecSeg{{W: w, Y: all}}, X: g.f32(x[:B*cols], B, cols), Norm: norm, Eps: 1e-6}); err != nil {
					t.Fatal(err)
				}
				got := read(t, all)
				for b := 0; b < B; b++ {
					for r := 0; r < rows; r++ {
						if math.Float32bits(got[b*rows+r]) != math.Float32bits(alone[b][r]) {
							t.Fatalf("batch of %d, column %d, row %d: %g, alone %g", B, b, r, got[b*rows+r], alone[b][r])
						}
					}
				}
			}
		})
	}
}

// readBytes copies a matrix's stored bytes back from the device.
func readBytes(t *testing.T, w DevMatrix) []byte {
	t.Helper()
	rb, _ := w.RowBytes()
	out := make([]byte, int64(w.Rows)*rb)
	if err := dev.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := readPtr(w.Ptr, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestMatVecFusedErrors(t *testing.T) {
	g := newBuffers(t)
	w := g.matrix(gguf.TypeQ8_0, make([]byte, 4*68), 4, 64, false)
	x, y := g.poisoned(2, 64), g.poisoned(2, 4)
	seg := MatVecSeg{W: w, Y: y}
	cases := map[string]MatVecOp{
		"no matrices":        {X: x},
		"four matrices":      {Segs: []MatVecSeg{seg, seg, seg, seg}, X: x},
		"GLU of one":         {Segs: []MatVecSeg{seg}, X: x, GLU: true},
		"GELU without a GLU": {Segs: []MatVecSeg{seg}, X: x, Act: GLUGELUTanh},
		"activation 5":       {Segs: []MatVecSeg{seg, seg}, X: x, GLU: true, Act: 5},
		"GLU accumulated":    {Segs: []MatVecSeg{seg, seg}, X: x, GLU: true, Accumulate: true},
		"norm length":        {Segs: []MatVecSeg{seg}, X: x, Norm: DevF32{x.Ptr, 1, 32}},
		"bias length":        {Segs: []MatVecSeg{{W: w, Y: y, Bias: DevF32{x.Ptr, 1, 3}}}, X: x},
		"GLU shapes differ":  {Segs: []MatVecSeg{seg, {W: DevMatrix{Type: gguf.TypeQ8_0, Rows: 2, Cols: 64, Ptr: w.Ptr}, Y: DevF32{y.Ptr, 2, 2}}}, X: x, GLU: true},
		"output of the rows": {Segs: []MatVecSeg{{W: w, Y: DevF32{y.Ptr, 2, 3}}}, X: x},
	}
	for name, op := range cases {
		if err := dev.MatVecFused(op); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestMatVecWide checks that the products read a Q6_K or Q8_0 matrix in the
// wide layout to the same bits as in the GGUF layout, alone, as gate and
// up, and in batches, and that the kernels that cannot read it say so.
func TestMatVecWide(t *testing.T) {
	for _, typ := range []gguf.Type{gguf.TypeQ6_K, gguf.TypeQ8_0} {
		for _, cols := range []int{256, 2304, 4096} {
			t.Run(fmt.Sprintf("%v/%d", typ, cols), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(5, uint64(cols)))
				g := newBuffers(t)
				const rows = 70
				gate, up := randomRows(rng, typ, rows, cols), randomRows(rng, typ, rows, cols)
				matrices := func(wide bool) (DevMatrix, DevMatrix) {
					return g.matrix(typ, gate, rows, cols, wide), g.matrix(typ, up, rows, cols, wide)
				}
				gw, uw := matrices(true)
				gg, ug := matrices(false)
				norm := g.f32(randF32(rng, cols), 1, cols)
				for _, B := range []int{1, 3, 13} {
					x := g.f32(randF32(rng, B*cols), B, cols)
					for _, glu := range []bool{false, true} {
						run := func(a, b DevMatrix) []float32 {
							op := MatVecOp{Segs: []MatVecSeg{{W: a, Y: g.poisoned(B, rows)}, {W: b, Y: g.poisoned(B, rows)}}, X: x, Norm: norm, Eps: 1e-6, GLU: glu}
							if err := dev.MatVecFused(op); err != nil {
								t.Fatal(err)
							}
							out := read(t, op.Segs[0].Y)
							if !glu {
								out = append(out, read(t, op.Segs[1].Y)...)
							}
							return out
						}
						got, want := run(gw, uw), run(gg, ug)
						for i := range want {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
								t.Fatalf("B=%d GLU %v: value %d is %g wide, %g as stored", B, glu, i, got[i], want[i])
							}
						}
					}
				}
				if err := dev.GetRows(gw, g.i32([]int32{0}), g.poisoned(1, cols)); err == nil {
					t.Error("GetRows read a wide matrix")
				}
			})
		}
	}
}
