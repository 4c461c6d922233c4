//go:build cuda

package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"llmserve/gguf"
)

// expertMatrices uploads E random experts of rows × cols of typ, each
// 256-byte aligned as the engine places them, and returns expert 0's
// matrix, the stride and every expert's values dequantized (E·rows × cols).
func expertMatrices(t *testing.T, g *gpuBuffers, rng *rand.Rand, typ gguf.Type, E, rows, cols int) (DevMatrix, int, []float64) {
	t.Helper()
	m := randMatrix(t, rng, typ, E*rows, cols)
	size := len(m.Data) / E
	stride := (size + 255) / 256 * 256
	padded := make([]byte, E*stride)
	for e := 0; e < E; e++ {
		copy(padded[e*stride:], m.Data[e*size:(e+1)*size])
	}
	return DevMatrix{Type: typ, Rows: rows, Cols: cols, Ptr: g.bytes(padded)}, stride, refDequant(t, m)
}

// TestCUDAMoEProductGated checks the chosen experts' products on both
// kernels: moe_mvq (8-bit dot products, the gate and up products in one
// launch) for the types and shapes it reads, moe_matvec with the gating
// as a launch of its own for the others, plain and gated (SiLU and GELU),
// against products of the dequantized experts with the input rounded to 8
// bits per 32 values.
func TestCUDAMoEProductGated(t *testing.T) {
	for _, c := range []struct {
		typ                 gguf.Type
		E, k, B, rows, cols int
		mvq, gatedMVQ       bool // moe_mvq runs the plain, the gated product
	}{
		{gguf.TypeQ8_0, 8, 2, 1, 70, 320, true, true},
		{gguf.TypeQ4_0, 5, 2, 2, 38, 192, true, true},
		{gguf.TypeQ4_K, 8, 2, 1, 134, 512, true, true},
		{gguf.TypeQ5_K, 6, 3, 2, 22, 768, true, true},
		{gguf.TypeQ6_K, 8, 2, 2, 46, 256, true, true},
		{gguf.TypeQ6_K, 4, 2, 1, 45, 256, false, true}, // odd rows: plain in pairs impossible
		{gguf.TypeQ8_0, 4, 1, 3, 12, 96, false, false}, // not whole 64-value groups
		{gguf.TypeQ4_1, 4, 2, 1, 20, 256, false, false},
	} {
		t.Run(fmt.Sprintf("%v_E%d_top%d_B%d_%dx%d", c.typ, c.E, c.k, c.B, c.rows, c.cols), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(21, uint64(c.rows*c.cols)))
			g := newBuffers(t)
			gate, stride, gf := expertMatrices(t, g, rng, c.typ, c.E, c.rows, c.cols)
			up, upStride, uf := expertMatrices(t, g, rng, c.typ, c.E, c.rows, c.cols)
			if got := dev.moeMVQ(gate, false); got != c.mvq {
				t.Errorf("moe_mvq runs the plain product: %v, want %v", got, c.mvq)
			}
			if got := dev.moeMVQ(gate, true); got != c.gatedMVQ {
				t.Errorf("moe_mvq runs the gated product: %v, want %v", got, c.gatedMVQ)
			}
			n := c.B * c.k
			picks := make([]int32, n)
			for i := range picks {
				picks[i] = int32((i*3 + 1) % c.E)
			}
			pd := g.i32(picks)
			dot := func(wf []float64, xr []float64, i, xi, r int) float64 {
				e := int(picks[i])
				var s float64
				for col := 0; col < c.cols; col++ {
					s += wf[(e*c.rows+r)*c.cols+col] * xr[xi*c.cols+col]
				}
				return s
			}
			for _, perSlot := range []bool{false, true} {
				xRows := c.B
				if perSlot {
					xRows = n
				}
				x := randF32(rng, xRows*c.cols)
				xr, xd := round8(x), g.f32(x, xRows, c.cols)
				xi := func(i int) int {
					if perSlot {
						return i
					}
					return i / c.k
				}
				y := g.poisoned(n, c.rows)
				if err := dev.MoEProduct(MoEProductOp{W: gate, Experts: c.E, Stride: int64(stride), X: xd, Pick: pd, Used: c.k, PerSlot: perSlot, Y: y}); err != nil {
					t.Fatal(err)
				}
				want := make([]float64, n*c.rows)
				for i := range n {
					for r := range c.rows {
						want[i*c.rows+r] = dot(gf, xr, i, xi(i), r)
					}
				}
				checkNMSE(t, fmt.Sprintf("plain perSlot=%v", perSlot), read(t, y), want, 1e-8)
				for _, act := range []GLUAct{GLUSiLU, GLUGELUTanh} {
					f := refSiLU
					if act == GLUGELUTanh {
						f = refGELUTanh
					}
					y, scratch := g.poisoned(n, c.rows), g.poisoned(n, c.rows)
					if err := dev.MoEProduct(MoEProductOp{W: gate, Experts: c.E, Stride: int64(stride), X: xd, Pick: pd, Used: c.k, PerSlot: perSlot, Y: y,
						Up: up, UpStride: int64(upStride), Act: act, UpScratch: scratch}); err != nil {
						t.Fatal(err)
					}
					for i := range n {
						for r := range c.rows {
							want[i*c.rows+r] = f(dot(gf, xr, i, xi(i), r)) * dot(uf, xr, i, xi(i), r)
						}
					}
					checkNMSE(t, fmt.Sprintf("gated act %d perSlot=%v", act, perSlot), read(t, y), want, 1e-8)
				}
			}
		})
	}
	g := newBuffers(t)
	rng := rand.New(rand.NewPCG(5, 6))
	gate, stride, _ := expertMatrices(t, g, rng, gguf.TypeQ4_K, 2, 8, 256)
	up, _, _ := expertMatrices(t, g, rng, gguf.TypeQ8_0, 2, 8, 256)
	op := MoEProductOp{W: gate, Experts: 2, Stride: int64(stride), X: g.poisoned(1, 256), Pick: g.i32([]int32{1}), Used: 1, Y: g.poisoned(1, 8), Up: up}
	if err := dev.MoEProduct(op); err == nil {
		t.Error("gated product with up experts of another type: no error")
	}
	op.Up, op.UpStride, op.Act = gate, int64(stride), GLUAct(7)
	if err := dev.MoEProduct(op); err == nil {
		t.Error("gated product with activation 7: no error")
	}
}
