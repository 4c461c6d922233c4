//go:build cuda

package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"llmserve/gguf"
)

// TestRopeEpilogue checks that a Q/K/V product with its rotation and cache
// write fused in (8-bit kernels and, for one token, the F16 one; llama's
// pairwise and the neox rotation, partial, with frequency factors and a
// scale) or run after it (F16 weights over several tokens, head norms)
// leaves the queries and the cache as the product followed by RopeStore
// does, padding tokens writing nothing.
func TestRopeEpilogue(t *testing.T) {
	cases := []struct {
		typ          gguf.Type
		headDim, dim int
		neox, norm   bool
		factors      bool
		fusable      bool    // the epilogue's parameters allow it to run in the product
		one          bool    // a step of one token (the batch-1 kernels)
		scale        float32 // RopeParams.Scale
	}{
		{gguf.TypeQ4_K, 64, 64, false, false, false, true, false, 0},
		{gguf.TypeQ6_K, 128, 128, false, false, true, true, false, 0},
		{gguf.TypeQ8_0, 128, 64, false, false, false, true, false, 0},
		{gguf.TypeF16, 64, 64, false, false, false, true, false, 0}, // fusable, but F16 products of 3 tokens run apart: the rotation follows
		{gguf.TypeQ4_K, 64, 64, true, false, false, true, false, 0},
		{gguf.TypeQ8_0, 128, 64, true, false, true, true, false, 1.19},
		{gguf.TypeQ6_K, 96, 96, true, false, true, true, true, 1.19}, // Phi-3.5's heads
		{gguf.TypeQ4_K, 256, 256, true, false, false, true, true, 0}, // Gemma 2's
		{gguf.TypeF16, 128, 128, true, false, false, true, true, 0},  // mvh_1
		{gguf.TypeQ4_K, 64, 64, false, false, false, true, true, 0},
		{gguf.TypeQ4_K, 128, 128, true, true, false, false, false, 0},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%v_hd%d_dim%d_neox%v_norm%v_ff%v_one%v_scale%g", c.typ, c.headDim, c.dim, c.neox, c.norm, c.factors, c.one, c.scale), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(8, uint64(c.headDim+c.dim)+uint64(c.typ)))
			g := newBuffers(t)
			heads, kvHeads, cols, ctx, maxSeqs := 4, 2, 512, 1024, 2
			pos := []int32{3, 1000, 17}
			seq := []int32{0, 1, -1}
			if c.one {
				pos, seq = pos[1:2], seq[1:2]
			}
			live := 0
			for _, s := range seq {
				if s >= 0 {
					live++
				}
			}
			B, qDim, kvDim := len(pos), heads*c.headDim, kvHeads*c.headDim
			st := newRopeStep(g, rng, c.typ, B, kvHeads, cols, RopeParams{Heads: heads, HeadDim: c.headDim, Dim: c.dim, Base: 500000, Neox: c.neox, Scale: c.scale}, c.factors, c.norm)
			r, qn, kn := st.rope, st.qn, st.kn
			pd, sd := g.i32(pos), g.i32(seq)
			// run leaves the queries and the cache of one way of running the step.
			run := func(fuse bool) (outQ, outK, outV []float32) {
				q, k, v := g.poisoned(B, qDim), g.poisoned(B, kvDim), g.poisoned(B, kvDim)
				kcb, vcb := g.poisoned(maxSeqs*ctx, kvDim), g.poisoned(maxSeqs*ctx, kvDim)
				cache := DevKVCache{K: kcb.Ptr, V: vcb.Ptr, MaxSeqs: maxSeqs, Ctx: ctx, KVHeads: kvHeads, HeadDim: c.headDim}
				rs := RopeStoreOp{Cache: cache, QNorm: qn, KNorm: kn, Eps: 1e-6, Pos: pd, Seq: sd, Rope: r}
				var e *RopeEpilogue
				if fuse {
					e = keepEpilogue(t)(dev.NewRopeEpilogue(rs))
				}
				st.run(t, q, k, v, e, c.fusable, func() error {
					rs.Q, rs.K, rs.V = q, k, v
					return dev.RopeStore(rs)
				})
				return read(t, q), read(t, kcb), read(t, vcb)
			}
			wantQ, wantK, wantV := run(false)
			gotQ, gotK, gotV := run(true)
			checkNMSE(t, "queries", gotQ, to64(wantQ), 1e-12)
			for name, pair := range map[string][2][]float32{"K": {gotK, wantK}, "V": {gotV, wantV}} {
				got, want := pair[0], pair[1]
				written := 0
				for i := range want {
					gn, wn := math.IsNaN(float64(got[i])), math.IsNaN(float64(want[i]))
					if gn != wn {
						t.Fatalf("cache %s value %d: %g, want %g", name, i, got[i], want[i])
					}
					if !gn {
						written++
						if d := math.Abs(float64(got[i] - want[i])); d > 1e-6*math.Max(1, math.Abs(float64(want[i]))) {
							t.Fatalf("cache %s value %d: %g, want %g", name, i, got[i], want[i])
						}
					}
				}
				if want := live * kvDim; written != want {
					t.Errorf("cache %s: %d values written, want %d (a padding token writes nothing)", name, written, want)
				}
			}
		})
	}
}

// ropeStep is the step both epilogue tests run: the Q/K/V weights of a
// layer (rope.Heads query heads and kvHeads KV heads of rope.HeadDim, cols
// wide), the input of B tokens and its norm, the rotation and the head
// norms (zero when not drawn).
type ropeStep struct {
	wq, wk, wv DevMatrix
	x, norm    DevF32
	rope       RopeParams
	qn, kn     DevF32
}

// newRopeStep draws a ropeStep from rng (in this order: the weights, the
// input, its norm, with factors the rotation's frequency factors, with
// norm the head norms) for weights of typ.
func newRopeStep(g *gpuBuffers, rng *rand.Rand, typ gguf.Type, B, kvHeads, cols int, rope RopeParams, factors, norm bool) ropeStep {
	mat := func(rows int) DevMatrix {
		return g.matrix(typ, randomRows(rng, typ, rows, cols), rows, cols, false)
	}
	st := ropeStep{rope: rope}
	st.wq, st.wk, st.wv = mat(rope.Heads*rope.HeadDim), mat(kvHeads*rope.HeadDim), mat(kvHeads*rope.HeadDim)
	st.x, st.norm = g.f32(randF32(rng, B*cols), B, cols), g.f32(randF32(rng, cols), 1, cols)
	if factors {
		ff := make([]float32, rope.Dim/2)
		for i := range ff {
			ff[i] = 1 + 7*rng.Float32()
		}
		st.rope.Factors = g.f32(ff, 1, len(ff))
	}
	if norm {
		hd := rope.HeadDim
		st.qn, st.kn = g.f32(randF32(rng, hd), 1, hd), g.f32(randF32(rng, hd), 1, hd)
	}
	return st
}

// product is the step's Q/K/V product into q, k and v.
func (st ropeStep) product(q, k, v DevF32) MatVecOp {
	return MatVecOp{Segs: []MatVecSeg{{W: st.wq, Y: q}, {W: st.wk, Y: k}, {W: st.wv, Y: v}}, X: st.x, Norm: st.norm, Eps: 1e-6}
}

// run runs the step's product into q, k and v: with e, the rotation and
// cache write fused in (e.Fused() must be fusable), else the product and
// then after (the rotation and cache write on their own).
func (st ropeStep) run(t *testing.T, q, k, v DevF32, e *RopeEpilogue, fusable bool, after func() error) {
	t.Helper()
	op := st.product(q, k, v)
	if e != nil {
		if e.Fused() != fusable {
			t.Errorf("Fused() = %v, want %v", e.Fused(), fusable)
		}
		op.Rope = e
	}
	if err := dev.MatVecFused(op); err != nil {
		t.Fatal(err)
	}
	if e == nil {
		if err := after(); err != nil {
			t.Fatal(err)
		}
	}
}

// keepEpilogue takes the result of a NewRopeEpilogue call (or
// NewPagedRopeEpilogue), failing t on its error, and frees the epilogue
// when t ends.
func keepEpilogue(t *testing.T) func(*RopeEpilogue, error) *RopeEpilogue {
	return func(e *RopeEpilogue, err error) *RopeEpilogue {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := e.Free(); err != nil {
				t.Errorf("free epilogue: %v", err)
			}
		})
		return e
	}
}
