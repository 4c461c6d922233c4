//go:build cuda

package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"llmserve/gguf"
)

// TestGPUMatMulsInputs checks MatMuls with each input mode (X, RMSNorm(X)
// scaled, SwiGLU of X and Up) against the f64 product of the dequantized
// weights with the same input computed on the host, on a Q8_0 matrix (the
// int8 tensor-core path, input computed as it is rounded), an F32 one (the
// matrix-vector path, input written to Temp first) and an F16 one (the
// 16-bit tensor-core path, from Temp too), for batches that are not tile
// multiples and rows of 10 and of 130 blocks of 32 values (mmq_prep's
// thread blocks cover a row in parts of 8·prepPer blocks: none of them a
// multiple), with and without accumulation; with X as input the Q8_0
// product must give MatMul's bits in the tile and split MatMuls chose
// (mmqProductVariant).
func TestGPUMatMulsInputs(t *testing.T) {
	const rows = 100
	for _, c := range []struct {
		typ  gguf.Type
		cols int
	}{{gguf.TypeQ8_0, 320}, {gguf.TypeF32, 320}, {gguf.TypeF16, 320}, {gguf.TypeQ8_0, 4160}, {gguf.TypeF16, 4160}} {
		typ, cols := c.typ, c.cols
		rng := rand.New(rand.NewPCG(3, uint64(typ)+uint64(cols)))
		g := newBuffers(t)
		data := randomRows(rng, typ, rows, cols)
		w := g.matrix(typ, data, rows, cols, false)
		wf := make([]float64, 0, rows*cols)
		for r := 0; r < rows; r++ {
			rb := len(data) / rows
			wf = append(wf, refDequantRow(typ, data[r*rb:(r+1)*rb], cols)...)
		}
		for _, B := range []int{1, 7, 65, 130} {
			for _, mode := range []string{"plain", "norm", "glu"} {
				for _, acc := range []bool{false, true} {
					t.Run(fmt.Sprintf("%v/cols%d/B%d/%s/accumulate=%v", typ, cols, B, mode, acc), func(t *testing.T) {
						x, up, norm, y0 := randF32(rng, B*cols), randF32(rng, B*cols), randF32(rng, cols), randF32(rng, B*rows)
						in := matMulsInput(mode, x, up, norm, B, cols)
						want := make([]float64, B*rows)
						for b := 0; b < B; b++ {
							for i := 0; i < rows; i++ {
								var s float64
								for k := 0; k < cols; k++ {
									s += wf[i*cols+k] * in[b*cols+k]
								}
								if acc {
									s += float64(y0[b*rows+i])
								}
								want[b*rows+i] = s
							}
						}
						X, U, N := g.f32(x, B, cols), g.f32(up, B, cols), g.f32(norm, 1, cols)
						Y := g.f32(y0, B, rows)
						if !acc {
							Y = g.poisoned(B, rows)
						}
						scratch := g.poisoned(1, int(MatMulsScratchBytes(B, cols)/4))
						op := MatMulsOp{Segs: []MatVecSeg{{W: w, Y: Y}}, X: X, Accumulate: acc,
							Scratch: scratch.Ptr, ScratchBytes: int64(scratch.Len()) * 4, Temp: g.poisoned(B, cols)}
						switch mode {
						case "norm":
							op.Norm, op.Eps = N, 1e-5
						case "glu":
							op.Up, op.Temp = U, X // SwiGLU in place, as the engine runs it
						}
						if err := dev.MatMuls(op); err != nil {
							t.Fatal(err)
						}
						got := read(t, Y)
						// Both paths round the input to 8 bits in blocks of 32
						// for quantized weights; F32 weights take it as is.
						checkNMSE(t, "f64 product", got, want, 1e-3)
						if mode != "plain" || typ != gguf.TypeQ8_0 || acc {
							return
						}
						y2 := g.poisoned(B, rows)
						if err := dev.MatMul(MatMulOp{W: w, X: g.f32(x, B, cols), Y: y2, Scratch: scratch.Ptr, ScratchBytes: int64(scratch.Len()) * 4}); err != nil {
							t.Fatal(err)
						}
						if n := bitsDiffer32(got, read(t, y2)); n != 0 {
							t.Errorf("%d values differ from MatMul's", n)
						}
					})
				}
			}
		}
	}
	t.Run("refused", func(t *testing.T) {
		const cols = 320
		g := newBuffers(t)
		rng := rand.New(rand.NewPCG(5, 6))
		X, Y := g.f32(make([]float32, cols), 1, cols), g.f32(make([]float32, rows), 1, rows)
		N := g.f32(make([]float32, cols), 1, cols)
		q8 := g.matrix(gguf.TypeQ8_0, randomRows(rng, gguf.TypeQ8_0, rows, cols), rows, cols, false)
		f32 := g.matrix(gguf.TypeF32, randomRows(rng, gguf.TypeF32, rows, cols), rows, cols, false)
		scratch := g.poisoned(1, int(MatMulsScratchBytes(1, cols)/4))
		for name, op := range map[string]MatMulsOp{
			"norm and SwiGLU":           {Segs: []MatVecSeg{{W: q8, Y: Y}}, X: X, Norm: N, Up: X},
			"norm of the wrong width":   {Segs: []MatVecSeg{{W: q8, Y: Y}}, X: X, Norm: Y},
			"no Temp for matvec inputs": {Segs: []MatVecSeg{{W: f32, Y: Y}}, X: X, Norm: N},
			"four matrices":             {Segs: []MatVecSeg{{W: q8, Y: Y}, {W: q8, Y: Y}, {W: q8, Y: Y}, {W: q8, Y: Y}}, X: X},
			"short scratch":             {Segs: []MatVecSeg{{W: q8, Y: Y}}, X: X, Scratch: scratch.Ptr, ScratchBytes: 4},
		} {
			if err := dev.MatMuls(op); err == nil {
				t.Errorf("%s: MatMuls accepted it", name)
			}
		}
	})
}

// matMulsInput is a MatMulsOp's input computed in f64 on the host.
func matMulsInput(mode string, x, up, norm []float32, B, cols int) []float64 {
	in := make([]float64, B*cols)
	for b := 0; b < B; b++ {
		row := x[b*cols : (b+1)*cols]
		var ss float64
		for _, v := range row {
			ss += float64(v) * float64(v)
		}
		sc := 1 / math.Sqrt(ss/float64(cols)+1e-5)
		for k, v := range row {
			g := float64(v)
			switch mode {
			case "plain":
				in[b*cols+k] = g
			case "norm":
				in[b*cols+k] = g * sc * float64(norm[k])
			case "glu":
				in[b*cols+k] = g / (1 + math.Exp(-g)) * float64(up[b*cols+k])
			}
		}
	}
	return in
}

func bitsDiffer32(a, b []float32) int {
	n := 0
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			n++
		}
	}
	return n
}
