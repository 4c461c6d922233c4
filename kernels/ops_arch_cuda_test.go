//go:build cuda

package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"llmserve/gguf"
)

func refGELUTanh(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
}

func refSiLU(x float64) float64 { return x / (1 + math.Exp(-x)) }

// TestCUDAGLUArch checks the gated activations on separate gate and up
// buffers, in place, and on the fused layout (gate then up in each row),
// at odd sizes.
func TestCUDAGLUArch(t *testing.T) {
	for _, act := range []GLUAct{GLUSiLU, GLUGELUTanh} {
		f := refSiLU
		if act == GLUGELUTanh {
			f = refGELUTanh
		}
		for _, sz := range []struct{ rows, ffn int }{{1, 7}, {3, 64}, {5, 333}, {67, 130}} {
			rows, ffn := sz.rows, sz.ffn
			t.Run(fmt.Sprintf("act%d/%dx%d", act, rows, ffn), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(11, uint64(rows*ffn)))
				g := newBuffers(t)
				gate, up := randF32(rng, rows*ffn), randF32(rng, rows*ffn)
				for i := range gate {
					gate[i] *= 3 // reach the tails of both activations
				}
				want := make([]float64, rows*ffn)
				for i := range want {
					want[i] = f(float64(gate[i])) * float64(up[i])
				}
				out := g.poisoned(rows, ffn)
				if err := dev.GLUPair(g.f32(gate, rows, ffn), g.f32(up, rows, ffn), out, act); err != nil {
					t.Fatal(err)
				}
				checkNMSE(t, "pair", read(t, out), want, 1e-10)
				gd := g.f32(gate, rows, ffn)
				if err := dev.GLUPair(gd, g.f32(up, rows, ffn), gd, act); err != nil {
					t.Fatal(err)
				}
				checkNMSE(t, "in place", read(t, gd), want, 1e-10)
				fused := make([]float32, 0, 2*rows*ffn)
				for r := 0; r < rows; r++ {
					fused = append(fused, gate[r*ffn:(r+1)*ffn]...)
					fused = append(fused, up[r*ffn:(r+1)*ffn]...)
				}
				out2 := g.poisoned(rows, ffn)
				if err := dev.GLUFused(g.f32(fused, rows, 2*ffn), out2, act); err != nil {
					t.Fatal(err)
				}
				checkNMSE(t, "fused", read(t, out2), want, 1e-10)
				in := g.f32(fused, rows, 2*ffn)
				if err := dev.GLUFused(in, DevF32{Ptr: in.Ptr, Rows: rows, Cols: ffn}, act); err == nil {
					t.Error("fused GLU written over its own input: no error")
				}
			})
		}
	}
}

// TestCUDAScaleSoftCapCopy checks scale, soft-cap (in place and not) and the column copy
// of a fused product.
func TestCUDAScaleSoftCapCopy(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 1))
	rows, cols := 7, 291
	x := randF32(rng, rows*cols)
	for i := range x {
		x[i] *= 10
	}
	g := newBuffers(t)
	scale := make([]float64, len(x))
	capped := make([]float64, len(x))
	for i, v := range x {
		scale[i] = float64(v) * float64(float32(0.37))
		capped[i] = 5 * math.Tanh(float64(v)/5)
	}
	out := g.poisoned(rows, cols)
	if err := dev.Scale(g.f32(x, rows, cols), out, 0.37); err != nil {
		t.Fatal(err)
	}
	checkNMSE(t, "scale", read(t, out), scale, 1e-12)
	in := g.f32(x, rows, cols)
	if err := dev.SoftCap(in, in, 5); err != nil {
		t.Fatal(err)
	}
	checkNMSE(t, "softcap in place", read(t, in), capped, 1e-11)
	if err := dev.SoftCap(in, in, 0); err == nil {
		t.Error("softcap with bound 0: no error")
	}
	for _, c := range []struct{ off, width int }{{0, 100}, {100, 91}, {191, 100}, {0, cols}} {
		dst := g.poisoned(rows, c.width)
		if err := dev.CopyCols(g.f32(x, rows, cols), c.off, dst); err != nil {
			t.Fatal(err)
		}
		want := make([]float64, 0, rows*c.width)
		for r := 0; r < rows; r++ {
			want = append(want, to64(x[r*cols+c.off:r*cols+c.off+c.width])...)
		}
		checkNMSE(t, fmt.Sprintf("copy_cols %d+%d", c.off, c.width), read(t, dst), want, 0)
	}
	if err := dev.CopyCols(g.f32(x, rows, cols), 200, g.poisoned(rows, 100)); err == nil {
		t.Error("copy_cols past the row: no error")
	}
}

// refRoute is the CPU engine's routing (decode/cpu_moe.go) in float64:
// softmax, the k largest (the lower index first among equals),
// renormalized; dense over the experts.
func refRoute(logits []float32, E, k int) []float64 {
	rows := len(logits) / E
	w := make([]float64, len(logits))
	for r := 0; r < rows; r++ {
		l := logits[r*E : (r+1)*E]
		mx := math.Inf(-1)
		for _, v := range l {
			mx = math.Max(mx, float64(v))
		}
		p := make([]float64, E)
		var sum float64
		for e, v := range l {
			p[e] = math.Exp(float64(v) - mx)
			sum += p[e]
		}
		taken := make([]bool, E)
		var tot float64
		picks := make([]int, k)
		for j := range picks {
			best := -1
			for e := range p {
				if !taken[e] && (best < 0 || p[e] > p[best]) {
					best = e
				}
			}
			taken[best], picks[j] = true, best
			tot += p[best]
		}
		for _, e := range picks {
			w[r*E+e] = p[e] / tot
		}
	}
	return w
}

// TestCUDAMoERoute checks the routing at a few expert counts, with tied
// logits in some rows (the lower index wins), and the weighted sum.
func TestCUDAMoERoute(t *testing.T) {
	for _, c := range []struct{ rows, E, k int }{{1, 4, 2}, {9, 8, 2}, {70, 64, 8}, {3, 5, 5}} {
		t.Run(fmt.Sprintf("%dx%d_top%d", c.rows, c.E, c.k), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(13, uint64(c.rows*c.E)))
			g := newBuffers(t)
			logits := randF32(rng, c.rows*c.E)
			for e := 0; e < c.E; e++ {
				logits[e] = 1 // row 0: all tied
			}
			w := g.poisoned(c.rows, c.E)
			pw := g.poisoned(c.rows, c.k)
			pick := g.i32(make([]int32, c.rows*c.k))
			if err := dev.MoERoute(MoERouteOp{Logits: g.f32(logits, c.rows, c.E), W: w, Used: c.k, Pick: pick, Weight: pw}); err != nil {
				t.Fatal(err)
			}
			want := refRoute(logits, c.E, c.k)
			got := read(t, w)
			for i := range want {
				if (want[i] == 0) != (got[i] == 0) {
					t.Fatalf("row %d expert %d: weight %g, want %g (a different choice)", i/c.E, i%c.E, got[i], want[i])
				}
			}
			checkNMSE(t, "moe_route", got, want, 1e-12)
			// The picks: the chosen experts, the most probable first (the
			// lower index among equals), with the dense weights.
			picks, pws := readI32(t, pick), read(t, pw)
			for r := 0; r < c.rows; r++ {
				for j := 0; j < c.k; j++ {
					e := int(picks[r*c.k+j])
					if e < 0 || e >= c.E || got[r*c.E+e] == 0 || pws[r*c.k+j] != got[r*c.E+e] {
						t.Fatalf("row %d pick %d: expert %d weight %g, dense weights %v", r, j, e, pws[r*c.k+j], got[r*c.E:(r+1)*c.E])
					}
					if j > 0 {
						prev := int(picks[r*c.k+j-1])
						if pws[r*c.k+j] > pws[r*c.k+j-1] || (pws[r*c.k+j] == pws[r*c.k+j-1] && e < prev) {
							t.Errorf("row %d: pick %d (expert %d, %g) after expert %d (%g)", r, j, e, pws[r*c.k+j], prev, pws[r*c.k+j-1])
						}
					}
				}
			}

			cols := 37
			ys := make([][]float32, c.E)
			acc := g.poisoned(c.rows, cols)
			sum := make([]float64, c.rows*cols)
			for e := range ys {
				ys[e] = randF32(rng, c.rows*cols)
				for i := range ys[e] {
					r := i / cols
					if want[r*c.E+e] == 0 {
						ys[e][i] = float32(math.NaN()) // an expert's rows for tokens that did not choose it are not read
					} else {
						sum[i] += float64(got[r*c.E+e]) * float64(ys[e][i])
					}
				}
				if err := dev.MoEAccum(acc, g.f32(ys[e], c.rows, cols), w, e, e == 0); err != nil {
					t.Fatal(err)
				}
			}
			checkNMSE(t, "moe_accum", read(t, acc), sum, 1e-12)
		})
	}
}

// TestCUDAAttentionArch checks attention with a logit scale, soft-capping
// and a sliding window against a float64 reference, over tokens of three
// sequences (a prompt run, single tokens near the cache's end) and a
// padding token.
func TestCUDAAttentionArch(t *testing.T) {
	cases := []struct {
		heads, kvHeads, headDim, ctx int
		scale, cap                   float32
		window                       int
	}{
		{2, 1, 16, 40, 0.25, 5, 8},
		{4, 4, 32, 300, 0.1767767, 0, 2047},
		{4, 2, 28, 77, 0.3, 50, 0},
		{3, 1, 256, 130, 0.0625, 30, 33},
		{16, 2, 64, 1000, 0.125, 0, 100},
		{16, 8, 256, 1200, 0.0625, 50, 1000}, // Gemma-2-9B's heads: two a KV head, tiles of 16 positions of 256 values
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("h%d_kv%d_d%d_cap%g_w%d", c.heads, c.kvHeads, c.headDim, c.cap, c.window), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(14, uint64(c.headDim*c.heads+c.window)))
			g := newBuffers(t)
			maxSeqs, kvdim, qdim := 3, c.kvHeads*c.headDim, c.heads*c.headDim
			kc, vc := randF32(rng, maxSeqs*c.ctx*kvdim), randF32(rng, maxSeqs*c.ctx*kvdim)
			kb, vb := g.f32(kc, maxSeqs*c.ctx, kvdim), g.f32(vc, maxSeqs*c.ctx, kvdim)
			cache := DevKVCache{K: kb.Ptr, V: vb.Ptr, MaxSeqs: maxSeqs, Ctx: c.ctx, KVHeads: c.kvHeads, HeadDim: c.headDim}
			pos := []int32{0, 5, 6, 7, int32(c.ctx - 1), int32(c.ctx / 2), 0}
			seq := []int32{0, 0, 0, 0, 1, 2, -1}
			B := len(pos)
			q := randF32(rng, B*qdim)
			for i := range q {
				q[i] *= 4 // logits large enough for the cap to matter
			}
			out := g.poisoned(B, qdim)
			op := AttentionArchOp{Cache: cache, Q: g.f32(q, B, qdim), Out: out, Heads: c.heads, Pos: g.i32(pos), Seq: g.i32(seq),
				Scratch: g.poisoned(1, AttentionScratch(cache, B, c.heads)), Scale: c.scale, Cap: c.cap, Window: c.window}
			if err := dev.AttentionArch(op); err != nil {
				t.Fatal(err)
			}
			want := make([]float64, B*qdim)
			for i := 0; i < B; i++ {
				if seq[i] < 0 {
					continue
				}
				first, last := 0, int(pos[i])
				if c.window > 0 {
					first = max(0, last+1-c.window)
				}
				for h := 0; h < c.heads; h++ {
					kvh := h / (c.heads / c.kvHeads)
					qh := q[(i*c.heads+h)*c.headDim:]
					sc := make([]float64, last+1-first)
					mx := math.Inf(-1)
					for j := range sc {
						kt := kc[(int(seq[i])*c.ctx+first+j)*kvdim+kvh*c.headDim:]
						for d := 0; d < c.headDim; d++ {
							sc[j] += float64(qh[d]) * float64(kt[d])
						}
						sc[j] *= float64(c.scale)
						if c.cap > 0 {
							sc[j] = float64(c.cap) * math.Tanh(sc[j]/float64(c.cap))
						}
						mx = math.Max(mx, sc[j])
					}
					var sum float64
					for j := range sc {
						sc[j] = math.Exp(sc[j] - mx)
						sum += sc[j]
					}
					o := want[(i*c.heads+h)*c.headDim:]
					for j := range sc {
						vt := vc[(int(seq[i])*c.ctx+first+j)*kvdim+kvh*c.headDim:]
						for d := 0; d < c.headDim; d++ {
							o[d] += sc[j] / sum * float64(vt[d])
						}
					}
				}
			}
			checkNMSE(t, "attention_arch", read(t, out), want, 1e-8)
		})
	}
}

// round8 is x as the products round it for quantized weights: per 32
// values d = max|v|/127, each value d·round(v/d) (to even), in f32.
func round8(x []float32) []float64 {
	out := make([]float64, len(x))
	for b := 0; b < len(x); b += 32 {
		var amax float32
		for _, v := range x[b : b+32] {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		d, id := amax/127, float32(0)
		if amax > 0 {
			id = 127 / amax
		}
		for i, v := range x[b : b+32] {
			out[b+i] = float64(d * float32(math.RoundToEven(float64(v*id))))
		}
	}
	return out
}

// TestCUDAMoEProduct checks the products of the chosen experts: each
// slot's rows of its expert's matrix times its token's input (or its own,
// per slot), for float and quantized types, and their weighted sum.
func TestCUDAMoEProduct(t *testing.T) {
	for _, c := range []struct {
		typ                 gguf.Type
		E, k, B, rows, cols int
	}{
		{gguf.TypeF32, 4, 2, 1, 37, 64},
		{gguf.TypeQ8_0, 8, 2, 2, 70, 96},
		{gguf.TypeQ4_K, 8, 2, 1, 19, 512},
		{gguf.TypeQ6_K, 6, 3, 3, 9, 256},
		{gguf.TypeF16, 5, 1, 4, 33, 32},
	} {
		t.Run(fmt.Sprintf("%v_E%d_top%d_B%d", c.typ, c.E, c.k, c.B), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(15, uint64(c.rows*c.cols)))
			g := newBuffers(t)
			w, stride, wf := expertMatrices(t, g, rng, c.typ, c.E, c.rows, c.cols)
			n := c.B * c.k
			picks := make([]int32, n)
			for i := range picks {
				picks[i] = int32((i*5 + 3) % c.E) // distinct within a token for these sizes
			}
			pd := g.i32(picks)
			quant := c.typ != gguf.TypeF32 && c.typ != gguf.TypeF16
			for _, perSlot := range []bool{false, true} {
				xRows := c.B
				if perSlot {
					xRows = n
				}
				x := randF32(rng, xRows*c.cols)
				xr := to64(x)
				if quant {
					xr = round8(x)
				}
				y := g.poisoned(n, c.rows)
				if err := dev.MoEProduct(MoEProductOp{W: w, Experts: c.E, Stride: int64(stride), X: g.f32(x, xRows, c.cols), Pick: pd, Used: c.k, PerSlot: perSlot, Y: y}); err != nil {
					t.Fatal(err)
				}
				want := make([]float64, n*c.rows)
				for i := 0; i < n; i++ {
					xi := i / c.k
					if perSlot {
						xi = i
					}
					e := int(picks[i])
					for r := 0; r < c.rows; r++ {
						var sum float64
						for col := 0; col < c.cols; col++ {
							sum += wf[(e*c.rows+r)*c.cols+col] * xr[xi*c.cols+col]
						}
						want[i*c.rows+r] = sum
					}
				}
				got := read(t, y)
				checkNMSE(t, fmt.Sprintf("moe_matvec perSlot=%v", perSlot), got, want, 1e-8)

				weights := randF32(rng, n)
				out := g.poisoned(c.B, c.rows)
				if err := dev.MoECombine(out, y, g.f32(weights, c.B, c.k)); err != nil {
					t.Fatal(err)
				}
				sum := make([]float64, c.B*c.rows)
				for i := 0; i < n; i++ {
					for r := 0; r < c.rows; r++ {
						sum[(i/c.k)*c.rows+r] += float64(weights[i]) * float64(got[i*c.rows+r])
					}
				}
				checkNMSE(t, "moe_combine", read(t, out), sum, 1e-12)
			}
		})
	}
	g := newBuffers(t)
	wide := DevMatrix{Type: gguf.TypeQ8_0, Rows: 4, Cols: 256, Ptr: g.poisoned(1, 8*256).Ptr, Wide: true}
	if err := dev.MoEProduct(MoEProductOp{W: wide, Experts: 2, Stride: 4096, X: g.poisoned(1, 256), Pick: g.i32([]int32{0}), Used: 1, Y: g.poisoned(1, 4)}); err == nil {
		t.Error("moe_matvec of a wide matrix: no error")
	}
	flat := wide
	flat.Wide = false
	if err := dev.MoEProduct(MoEProductOp{W: flat, Experts: 2, Stride: 64, X: g.poisoned(1, 256), Pick: g.i32([]int32{0}), Used: 1, Y: g.poisoned(1, 4)}); err == nil {
		t.Error("moe_matvec of overlapping experts: no error")
	}
}

// TestCUDAMoEGroupedRows checks the gather of an expert mixture's slots
// into the grouped order (by expert, then token) and the weighted sum of
// the grouped outputs back per token, at widths no tile divides, with
// experts no token chose; then a row index outside the arrays (NaN, not a
// read past them) and shapes the wrappers refuse.
func TestCUDAMoEGroupedRows(t *testing.T) {
	for _, c := range []struct{ B, E, chosen, k, cols int }{
		{1, 4, 4, 2, 7},
		{65, 8, 5, 2, 130},
		{100, 4, 2, 2, 33},
		{37, 16, 9, 4, 256},
		{129, 8, 8, 1, 64},
	} {
		t.Run(fmt.Sprintf("B%d_E%d_of%d_top%d_%d", c.B, c.E, c.chosen, c.k, c.cols), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(21, uint64(c.B*c.cols)))
			g := newBuffers(t)
			n := c.B * c.k
			// Distinct experts per token, among the first `chosen` only.
			pick := make([]int, 0, n)
			for b := 0; b < c.B; b++ {
				pick = append(pick, rng.Perm(c.chosen)[:c.k]...)
			}
			var order []int32
			for e := 0; e < c.E; e++ {
				for s, p := range pick {
					if p == e {
						order = append(order, int32(s))
					}
				}
			}
			inv := make([]int32, n)
			for r, s := range order {
				inv[s] = int32(r)
			}
			x := randF32(rng, c.B*c.cols)
			grouped := g.poisoned(n, c.cols)
			if err := dev.MoEGather(MoEGatherOp{X: g.f32(x, c.B, c.cols), Order: g.i32(order), Used: c.k, Out: grouped}); err != nil {
				t.Fatal(err)
			}
			want := make([]float64, n*c.cols)
			for r, s := range order {
				for col := 0; col < c.cols; col++ {
					want[r*c.cols+col] = float64(x[(int(s)/c.k)*c.cols+col])
				}
			}
			checkNMSE(t, "moe_gather", read(t, grouped), want, 0)

			y, w := randF32(rng, n*c.cols), randF32(rng, n)
			out := g.poisoned(c.B, c.cols)
			if err := dev.MoECombineRows(MoECombineRowsOp{Out: out, Y: g.f32(y, n, c.cols), Weight: g.f32(w, c.B, c.k), Inv: g.i32(inv)}); err != nil {
				t.Fatal(err)
			}
			sum := make([]float64, c.B*c.cols)
			for s := 0; s < n; s++ {
				for col := 0; col < c.cols; col++ {
					sum[(s/c.k)*c.cols+col] += float64(w[s]) * float64(y[int(inv[s])*c.cols+col])
				}
			}
			checkNMSE(t, "moe_combine_rows", read(t, out), sum, 1e-12)
		})
	}
	g := newBuffers(t)
	x := g.f32([]float32{1, 2, 3, 4}, 2, 2) // 2 tokens of 2 values
	out := g.poisoned(2, 2)
	// Slot 5 belongs to token 2 of 2 picks each: not a row of x.
	if err := dev.MoEGather(MoEGatherOp{X: x, Order: g.i32([]int32{1, 5}), Used: 2, Out: out}); err != nil {
		t.Fatal(err)
	}
	if got := read(t, out); got[0] != 1 || got[1] != 2 || !math.IsNaN(float64(got[2])) || !math.IsNaN(float64(got[3])) {
		t.Errorf("moe_gather of slots 1 and 5 of 2 tokens: %v, want [1 2 NaN NaN]", got)
	}
	sum := g.poisoned(1, 2)
	if err := dev.MoECombineRows(MoECombineRowsOp{Out: sum, Y: x, Weight: g.f32([]float32{1, 1}, 1, 2), Inv: g.i32([]int32{0, 2})}); err != nil {
		t.Fatal(err)
	}
	if got := read(t, sum); !math.IsNaN(float64(got[0])) || !math.IsNaN(float64(got[1])) {
		t.Errorf("moe_combine_rows of rows 0 and 2 of 2: %v, want NaN", got)
	}
	for _, op := range []MoEGatherOp{
		{X: x, Order: g.i32([]int32{0}), Used: 2, Out: out},                          // 1 slot for 2 rows
		{X: x, Order: g.i32([]int32{0, 1}), Used: 0, Out: out},                       // no picks per token
		{X: x, Order: g.i32([]int32{0, 1, 2, 3, 0}), Used: 2, Out: g.poisoned(5, 2)}, // more slots than tokens·picks
		{X: x, Order: g.i32([]int32{0, 1}), Used: 2, Out: g.poisoned(2, 3)},          // widths differ
	} {
		if err := dev.MoEGather(op); err == nil {
			t.Errorf("moe_gather of x %d×%d, %d slots of %d picks, out %d×%d: no error", op.X.Rows, op.X.Cols, op.Order.Len, op.Used, op.Out.Rows, op.Out.Cols)
		}
	}
	for _, op := range []MoECombineRowsOp{
		{Out: sum, Y: x, Weight: g.f32([]float32{1, 1}, 1, 2), Inv: g.i32([]int32{0})},           // 1 slot for 2 picks
		{Out: sum, Y: x, Weight: g.f32([]float32{1, 1}, 2, 1), Inv: g.i32([]int32{0, 1})},        // weights for 2 tokens
		{Out: g.poisoned(1, 3), Y: x, Weight: g.f32([]float32{1}, 1, 1), Inv: g.i32([]int32{0})}, // widths differ
	} {
		if err := dev.MoECombineRows(op); err == nil {
			t.Errorf("moe_combine_rows of out %d×%d, y %d×%d, weights %d×%d, %d slots: no error", op.Out.Rows, op.Out.Cols, op.Y.Rows, op.Y.Cols, op.Weight.Rows, op.Weight.Cols, op.Inv.Len)
		}
	}
}
