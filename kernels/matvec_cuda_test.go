//go:build cuda

package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"llmserve/gguf"
)

// colsFor lists row lengths to test for t: several blocks, and for float
// types also a length that is not a multiple of 32.
func colsFor(t gguf.Type) []int {
	switch {
	case t.BlockSize() == gguf.QK_K:
		return []int{3 * gguf.QK_K}
	case isFloatType(t):
		return []int{448, 172}
	}
	return []int{448}
}

func TestGetRows(t *testing.T) {
	for _, typ := range matvecTypes {
		for _, cols := range colsFor(typ) {
			t.Run(fmt.Sprintf("%v/cols%d", typ, cols), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(1, uint64(typ)))
				g := newBuffers(t)
				rows := 9
				data := randomRows(rng, typ, rows, cols)
				rb, _ := typ.RowBytes(int64(cols))
				w := g.matrix(typ, data, rows, cols, false)
				ids := []int32{3, 0, 8, 3, -1, 9}
				out := g.poisoned(len(ids), cols)
				if err := dev.GetRows(w, g.i32(ids), out); err != nil {
					t.Fatal(err)
				}
				var want []float64
				for _, id := range ids {
					if id < 0 || int(id) >= rows {
						want = append(want, make([]float64, cols)...)
						continue
					}
					want = append(want, refDequantRow(typ, data[int64(id)*rb:int64(id+1)*rb], cols)...)
				}
				// Dequantization is exact up to the rounding of one or two
				// products, fused or not.
				checkNMSE(t, "get_rows", read(t, out), want, 1e-12)
			})
		}
	}
}

func TestMatVec(t *testing.T) {
	for _, typ := range matvecTypes {
		for _, cols := range colsFor(typ) {
			for _, b := range []int{1, 2, 3, 7, 8, 13, 64} {
				t.Run(fmt.Sprintf("%v/cols%d/B%d", typ, cols, b), func(t *testing.T) {
					rng := rand.New(rand.NewPCG(uint64(b), uint64(typ)))
					g := newBuffers(t)
					rows := 67
					data := randomRows(rng, typ, rows, cols)
					x := randF32(rng, b*cols)
					w := g.matrix(typ, data, rows, cols, false)
					y := g.poisoned(b, rows)
					if err := dev.MatVec(w, g.f32(x, b, cols), y); err != nil {
						t.Fatal(err)
					}
					if !isFloatType(typ) {
						x = refQ8(x)
					}
					checkNMSE(t, "matvec", read(t, y), refProduct(typ, data, rows, cols, x), 1e-6)
				})
			}
		}
	}
}

func TestMatVecShapeErrors(t *testing.T) {
	g := newBuffers(t)
	w := g.matrix(gguf.TypeQ8_0, make([]byte, 4*68), 4, 64, false)
	x := g.poisoned(2, 64)
	cases := []struct {
		name string
		w    DevMatrix
		x, y DevF32
	}{
		{"x width", w, DevF32{x.Ptr, 2, 32}, g.poisoned(2, 4)},
		{"y width", w, x, g.poisoned(2, 5)},
		{"batch mismatch", w, x, g.poisoned(3, 4)},
		{"batch too large", w, DevF32{x.Ptr, MaxBatch + 1, 64}, DevF32{x.Ptr, MaxBatch + 1, 4}},
		{"cols not chunks", DevMatrix{Type: gguf.TypeQ8_0, Rows: 4, Cols: 40, Ptr: w.Ptr}, DevF32{x.Ptr, 1, 40}, DevF32{x.Ptr, 1, 4}},
		{"unsupported type", DevMatrix{Type: gguf.TypeIQ2_XS, Rows: 4, Cols: 256, Ptr: w.Ptr}, DevF32{x.Ptr, 1, 256}, DevF32{x.Ptr, 1, 4}},
	}
	for _, c := range cases {
		if err := dev.MatVec(c.w, c.x, c.y); err == nil {
			t.Errorf("%s: MatVec accepted W %d×%d, x %d×%d, y %d×%d", c.name, c.w.Rows, c.w.Cols, c.x.Rows, c.x.Cols, c.y.Rows, c.y.Cols)
		}
	}
}

// BenchmarkMatVec times one matrix-vector product over a weight matrix with
// the shape of Llama-3.1-8B's FFN up projection (14336 × 4096); the
// reported throughput counts the weight bytes read once per call.
func BenchmarkMatVec(b *testing.B) {
	types := []gguf.Type{gguf.TypeF16, gguf.TypeBF16, gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K}
	rows, cols := 14336, 4096
	for _, typ := range types {
		rng := rand.New(rand.NewPCG(7, uint64(typ)))
		g := newBuffers(b)
		data := randomRows(rng, typ, rows, cols)
		w := g.matrix(typ, data, rows, cols, false)
		x := g.f32(randF32(rng, MaxBatch*cols), MaxBatch, cols)
		y := g.poisoned(MaxBatch, rows)
		for _, batch := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("%v/B%d", typ, batch), func(b *testing.B) {
				xb, yb := x.Slice(0, batch), y.Slice(0, batch)
				if err := dev.MatVec(w, xb, yb); err != nil {
					b.Fatal(err)
				}
				if err := dev.Sync(); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(data)))
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := dev.MatVec(w, xb, yb); err != nil {
						b.Fatal(err)
					}
				}
				if err := dev.Sync(); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}
