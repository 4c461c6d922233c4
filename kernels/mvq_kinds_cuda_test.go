//go:build cuda

package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"llmserve/gguf"
)

// TestMatVecKinds checks the batch-1 kernels that serve one family of
// types (mvk_1: Q4_K and wide Q6_K; mv8_1: wide Q8_0) at real widths:
// rows many enough that each lane takes several groups (one warp per row
// pair, the last round short) and few rows whose pairs take four warps
// each; against the f64 reference, and bit for bit against the same
// columns in a batch of 3, which runs mvq_4.
func TestMatVecKinds(t *testing.T) {
	type seg struct {
		typ  gguf.Type
		wide bool
	}
	cases := []struct {
		name   string
		segs   []seg
		glu    bool
		kernel string
	}{
		{"q4k-q6k", []seg{{gguf.TypeQ4_K, false}, {gguf.TypeQ6_K, true}}, false, "mvk_1"},
		{"q4k-glu", []seg{{gguf.TypeQ4_K, false}, {gguf.TypeQ4_K, false}}, true, "mvk_1"},
		{"q8-glu", []seg{{gguf.TypeQ8_0, true}, {gguf.TypeQ8_0, true}}, true, "mv8_1"},
		{"q8", []seg{{gguf.TypeQ8_0, true}}, false, "mv8_1"},
	}
	// More row pairs than 16 per multiprocessor: one warp per pair
	// (warpsPerPair), so a lane takes cols/2048 groups; and few rows, whose
	// pairs take several warps each.
	for _, c := range cases {
		for _, shape := range [][2]int{{16*dev.ctx.Multiprocessors() + 8, 4352}, {16*dev.ctx.Multiprocessors() + 8, 14336}, {64, 14336}} {
			rows, cols := shape[0], shape[1]
			t.Run(fmt.Sprintf("%s/%dx%d", c.name, rows, cols), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(11, uint64(cols)))
				g := newBuffers(t)
				const B = 3
				x := randF32(rng, B*cols)
				norm := randF32(rng, cols)
				nx := refQ8(refRMSNorm(x, norm, cols, 1e-5))
				var segs, wides []MatVecSeg
				var data [][]byte
				for _, s := range c.segs {
					d := randomRows(rng, s.typ, rows, cols)
					data = append(data, d)
					w := g.matrix(s.typ, d, rows, cols, s.wide)
					segs = append(segs, MatVecSeg{W: w, Y: g.poisoned(B, rows)})
					wides = append(wides, MatVecSeg{W: w, Y: g.poisoned(1, rows)})
				}
				op := MatVecOp{Segs: segs, X: g.f32(x, B, cols), Norm: g.f32(norm, 1, cols), Eps: 1e-5, GLU: c.glu}
				if got, _ := mvqKernel(op, 1); got != c.kernel {
					t.Fatalf("batch 1 runs %s, want %s", got, c.kernel)
				}
				if err := dev.MatVecFused(op); err != nil {
					t.Fatal(err)
				}
				outs := len(segs)
				if c.glu {
					outs = 1
				}
				batch := make([][]float32, outs)
				for i := range batch {
					batch[i] = read(t, segs[i].Y)
				}
				for b := 0; b < B; b++ {
					one := op
					one.Segs, one.X = wides, g.f32(x[b*cols:(b+1)*cols], 1, cols)
					if err := dev.MatVecFused(one); err != nil {
						t.Fatal(err)
					}
					for i := 0; i < outs; i++ {
						got := read(t, wides[i].Y)
						for r, v := range got {
							if want := batch[i][b*rows+r]; math.Float32bits(v) != math.Float32bits(want) {
								t.Fatalf("segment %d, column %d, row %d: %g alone, %g in a batch of %d", i, b, r, v, want, B)
							}
						}
						if b > 0 {
							continue
						}
						want := refProduct(c.segs[i].typ, data[i], rows, cols, nx[:cols])
						if c.glu {
							up := refProduct(c.segs[1].typ, data[1], rows, cols, nx[:cols])
							for j := range want {
								want[j] = want[j] / (1 + math.Exp(-want[j])) * up[j]
							}
						}
						checkNMSE(t, fmt.Sprintf("segment %d", i), got, want, 1e-6)
					}
				}
			})
		}
	}
}
