//go:build cuda

package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"llmserve/internal/cuda"
)

func TestKVStoreAttention(t *testing.T) {
	cases := []struct{ heads, kvHeads, headDim, ctx int }{
		{4, 2, 64, 300},
		{8, 8, 8, 40},
		{32, 8, 128, 512},
		{2, 1, 256, 70},
		{3, 1, 80, 33},
		{16, 4, 128, 2048},
		{8, 1, 64, 8192},   // 8 heads per KV head; 128 positions per split: four tiles of 32
		{14, 2, 128, 600},  // 7 heads per KV head: 8 slots per thread
		{8, 1, 256, 100},   // 16 slots per thread; tiles of 16 positions (shared memory), two per split
		{32, 32, 96, 1500}, // Phi-3.5-mini's heads: fewer splits than attentionSplits (splitsFor)
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("h%d_kv%d_d%d", c.heads, c.kvHeads, c.headDim), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(6, uint64(c.headDim*c.heads)))
			g := newBuffers(t)
			maxSeqs, kvdim := 3, c.kvHeads*c.headDim
			kc := randF32(rng, maxSeqs*c.ctx*kvdim)
			vc := randF32(rng, maxSeqs*c.ctx*kvdim)
			kb, vb := g.f32(kc, maxSeqs*c.ctx, kvdim), g.f32(vc, maxSeqs*c.ctx, kvdim)
			cache := DevKVCache{K: kb.Ptr, V: vb.Ptr, MaxSeqs: maxSeqs, Ctx: c.ctx, KVHeads: c.kvHeads, HeadDim: c.headDim}
			// Tokens: two of sequence 0 (a prefill pair), one each of 1 and
			// 2, and a padding token.
			pos := []int32{5, 6, int32(c.ctx - 1), 0, 0}
			seq := []int32{0, 0, 1, 2, -1}
			b := len(pos)
			k, v := randF32(rng, b*kvdim), randF32(rng, b*kvdim)
			q := randF32(rng, b*c.heads*c.headDim)
			pd, sd := g.i32(pos), g.i32(seq)
			if err := dev.KVStore(cache, g.f32(k, b, kvdim), g.f32(v, b, kvdim), pd, sd); err != nil {
				t.Fatal(err)
			}
			out := g.poisoned(b, c.heads*c.headDim)
			scratch := g.poisoned(1, AttentionScratch(cache, b, c.heads))
			if err := dev.Attention(cache, g.f32(q, b, c.heads*c.headDim), out, c.heads, pd, sd, scratch); err != nil {
				t.Fatal(err)
			}
			for i := range pos {
				if seq[i] < 0 {
					continue
				}
				dst := (int(seq[i])*c.ctx + int(pos[i])) * kvdim
				copy(kc[dst:dst+kvdim], k[i*kvdim:])
				copy(vc[dst:dst+kvdim], v[i*kvdim:])
			}
			checkNMSE(t, "kv_store K", read(t, kb), to64(kc), 0)
			checkNMSE(t, "kv_store V", read(t, vb), to64(vc), 0)
			want := make([]float64, b*c.heads*c.headDim)
			scale := 1 / math.Sqrt(float64(c.headDim))
			for i := 0; i < b; i++ {
				if seq[i] < 0 {
					continue
				}
				for h := 0; h < c.heads; h++ {
					kvh := h / (c.heads / c.kvHeads)
					qh := q[(i*c.heads+h)*c.headDim:]
					n := int(pos[i]) + 1
					sc := make([]float64, n)
					mx := math.Inf(-1)
					for tp := 0; tp < n; tp++ {
						kt := kc[(int(seq[i])*c.ctx+tp)*kvdim+kvh*c.headDim:]
						for d := 0; d < c.headDim; d++ {
							sc[tp] += float64(qh[d]) * float64(kt[d])
						}
						sc[tp] *= scale
						mx = math.Max(mx, sc[tp])
					}
					var sum float64
					for tp := range sc {
						sc[tp] = math.Exp(sc[tp] - mx)
						sum += sc[tp]
					}
					o := want[(i*c.heads+h)*c.headDim:]
					for tp := 0; tp < n; tp++ {
						vt := vc[(int(seq[i])*c.ctx+tp)*kvdim+kvh*c.headDim:]
						for d := 0; d < c.headDim; d++ {
							o[d] += sc[tp] / sum * float64(vt[d])
						}
					}
				}
			}
			checkNMSE(t, "attention", read(t, out), want, 1e-6)
		})
	}
}

// TestGraph captures a chain of kernels, checks that replays compute what
// eager launches do, changes one kernel argument in the instance, and
// re-captures with cuGraphExecUpdate.
func TestGraph(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	g := newBuffers(t)
	n := 4096
	a, bias := randF32(rng, n), randF32(rng, n)
	y, bb, other := g.f32(a, 1, n), g.f32(bias, 1, n), g.f32(make([]float32, n), 1, n)
	step := func() error {
		if err := dev.AddBias(y, bb); err != nil {
			return err
		}
		return dev.SwiGLU(y, y, y)
	}
	graph, err := dev.Context().Capture(step)
	if err != nil {
		t.Fatal(err)
	}
	defer graph.Destroy()
	ref := to64(a)
	replay := func() {
		for i := range ref {
			v := ref[i] + float64(bias[i])
			ref[i] = v / (1 + math.Exp(-v)) * v
		}
	}
	for r := 0; r < 3; r++ {
		if err := graph.Launch(); err != nil {
			t.Fatal(err)
		}
		replay()
	}
	checkNMSE(t, "3 replays", read(t, y), ref, 1e-6)

	nodes, err := graph.KernelNodes()
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 2 {
		t.Fatalf("graph has %d kernel nodes, want 2", len(nodes))
	}
	// Point add_bias's output (arg 0 of 4) at other: one replay then adds
	// the bias to other's zeros.
	found := 0
	for _, nd := range nodes {
		ok, err := graph.Runs(nd, dev.kernels["add_bias"])
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			found++
			if err := graph.SetKernelArg(nd, 4, 0, cuda.P(other.Ptr)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if found != 1 {
		t.Fatalf("%d add_bias nodes in the graph, want 1", found)
	}
	if err := graph.Launch(); err != nil {
		t.Fatal(err)
	}
	checkNMSE(t, "bias redirected by SetKernelArg", read(t, other), to64(bias), 1e-12)

	if err := graph.Recapture(step); err != nil {
		t.Fatal(err)
	}
	if err := graph.WriteDot(t.TempDir() + "/g.dot"); err != nil {
		t.Errorf("WriteDot: %v", err)
	}
}

// BenchmarkAttention times attention for one decode token per sequence
// over a long context (Llama-3.1-8B heads).
func BenchmarkAttention(b *testing.B) {
	for _, batch := range []int{1, 16} {
		b.Run(fmt.Sprintf("B%d_ctx4096", batch), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(9, 9))
			g := newBuffers(b)
			heads, kvHeads, hd, ctx := 32, 8, 128, 4096
			kvdim := kvHeads * hd
			kb := g.f32(randF32(rng, batch*ctx*kvdim), batch*ctx, kvdim)
			vb := g.f32(randF32(rng, batch*ctx*kvdim), batch*ctx, kvdim)
			cache := DevKVCache{K: kb.Ptr, V: vb.Ptr, MaxSeqs: batch, Ctx: ctx, KVHeads: kvHeads, HeadDim: hd}
			pos, seq := make([]int32, batch), make([]int32, batch)
			for i := range pos {
				pos[i], seq[i] = int32(ctx-1), int32(i)
			}
			q := g.f32(randF32(rng, batch*heads*hd), batch, heads*hd)
			out := g.poisoned(batch, heads*hd)
			pd, sd := g.i32(pos), g.i32(seq)
			scratch := g.poisoned(1, AttentionScratch(cache, batch, heads))
			b.SetBytes(2 * int64(batch) * int64(ctx) * int64(kvdim) * 4)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := dev.Attention(cache, q, out, heads, pd, sd, scratch); err != nil {
					b.Fatal(err)
				}
			}
			if err := dev.Sync(); err != nil {
				b.Fatal(err)
			}
		})
	}
}
