//go:build cuda

package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"llmserve/internal/cuda"
)

// prefillCache is a random cache of 4 sequences × ctx positions × 2 KV
// heads of headDim values, on the host and the device.
type prefillCache struct {
	kc, vc []float32
	dev    DevKVCache
}

func newPrefillCache(g *gpuBuffers, rng *rand.Rand, kvHeads, headDim, ctx int) prefillCache {
	const maxSeqs = 4
	kvdim := kvHeads * headDim
	kc, vc := randF32(rng, maxSeqs*ctx*kvdim), randF32(rng, maxSeqs*ctx*kvdim)
	kb, vb := g.f32(kc, maxSeqs*ctx, kvdim), g.f32(vc, maxSeqs*ctx, kvdim)
	return prefillCache{kc, vc, DevKVCache{K: kb.Ptr, V: vb.Ptr, MaxSeqs: maxSeqs, Ctx: ctx, KVHeads: kvHeads, HeadDim: headDim}}
}

// prefillRun is one batch through AttentionPrefill and Attention, with the
// f64 reference: the NMSE of each against it and against each other, and
// the values of rows no tile covers that the prefill wrote.
type prefillRun struct {
	vsRef, attnVsRef, vsAttn float64
	touched                  int
}

// runPrefill runs the batch segs (heads query heads, tiles of tile rows,
// extra tile entries appended to the table as given) with random queries
// scaled by qScale and the scores sc (against AttentionArch with the same
// terms); with graphSized, MaxRows is the whole batch (as a captured graph
// launches it for any step) rather than the largest tile.
func runPrefill(t *testing.T, rng *rand.Rand, c prefillCache, heads int, segs []prefillSegment, tile int, extra []PrefillTile, qScale float32, graphSized bool, sc PrefillScores) prefillRun {
	t.Helper()
	g := &gpuBuffers{t: t} // Attention's scratch takes up to 0.5 GB: freed at return
	defer g.release()
	hd := c.dev.HeadDim
	seq, pos := prefillBatch(segs)
	B := len(seq)
	q := randF32(rng, B*heads*hd)
	for i := range q {
		q[i] *= qScale
	}
	tiles := append(PrefillTiles(seq, pos, tile), extra...)
	words, maxRows := PrefillTileTable(tiles)
	if graphSized {
		maxRows = B
	}
	qd := g.f32(q, B, heads*hd)
	out := g.poisoned(B, heads*hd)
	op := AttentionPrefillOp{Cache: c.dev, Q: qd, Out: out, Heads: heads, Tiles: g.i32(words).Ptr, NumTiles: len(tiles), MaxRows: maxRows, Scores: sc}
	if err := dev.AttentionPrefill(op); err != nil {
		t.Fatal(err)
	}
	attn := g.poisoned(B, heads*hd)
	scratch := g.poisoned(1, AttentionScratch(c.dev, B, heads))
	scale := sc.Scale
	if scale == 0 {
		scale = float32(1 / math.Sqrt(float64(hd)))
	}
	if err := dev.AttentionArch(AttentionArchOp{Cache: c.dev, Q: qd, Out: attn, Heads: heads, Pos: g.i32(pos), Seq: g.i32(seq), Scratch: scratch,
		Scale: scale, Cap: sc.Cap, Window: sc.Window}); err != nil {
		t.Fatal(err)
	}
	want := refScoredAttention(q, c.kc, c.vc, seq, pos, heads, c.dev.KVHeads, hd, c.dev.Ctx, runtime.NumCPU(), sc)
	got, ga := read(t, out), read(t, attn)
	var r prefillRun
	r.vsRef, r.touched = comparePrefill(got, want)
	r.attnVsRef, _ = comparePrefill(ga, want)
	// Attention writes zeros for padding rows: compare on covered rows.
	ref := make([]float64, len(ga))
	for i := range ga {
		ref[i] = float64(ga[i])
		if math.IsNaN(want[i]) {
			ref[i] = math.NaN()
		}
	}
	r.vsAttn, _ = comparePrefill(got, ref)
	return r
}

// release frees g's buffers now.
func (g *gpuBuffers) release() {
	for _, b := range g.bufs {
		if err := b.Free(); err != nil {
			g.t.Errorf("free: %v", err)
		}
	}
	g.bufs = nil
}

// prefillBound is the NMSE the prefill must reach against the f64
// reference and against Attention: f16 operands (Q, K, V and the softmax
// weights rounded to 11 significant bits) with f32 accumulation; the CPU
// model (TestPrefillModel) measures 1e-7 to 5e-7 on these inputs.
const prefillBound = 1e-5

// prefillLengths are the prompt lengths every head size and group is run
// at: below, at and past the 64-row tile and its multiples.
var prefillLengths = []int{1, 2, 7, 63, 64, 65, 127, 511, 512, 513}

// TestGPUAttentionPrefill checks AttentionPrefill against the f64
// reference of causal attention over a random cache and against Attention
// on the same rows (NMSE ≤ prefillBound each), with rows no tile covers
// left as they were (NaN): a prompt of every length of prefillLengths
// from position 0 and continuing a cached prefix of 300 positions, for
// heads of 64, 128 and 96 values (and 256 at a few lengths) and groups of
// 1, 4 and 8 query heads per KV head; then batches mixing two prompts,
// single decode rows and a padding row, in tiles of 64, 16 and 200 rows,
// with a tile entry out of range (a sequence past the cache) and unused
// (zero) entries that must be skipped, and once with MaxRows the whole
// batch, as a captured graph would launch it. The largest NMSE of each head size is logged.
func TestGPUAttentionPrefill(t *testing.T) {
	const ctx, kvHeads = 1100, 2
	for _, hd := range []int{64, 128, 96, 256} {
		t.Run(fmt.Sprintf("d%d", hd), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(18, uint64(hd)))
			g := newBuffers(t)
			c := newPrefillCache(g, rng, kvHeads, hd, ctx)
			worst := prefillRun{}
			check := func(name string, r prefillRun) {
				t.Helper()
				worst.vsRef, worst.attnVsRef, worst.vsAttn = max(worst.vsRef, r.vsRef), max(worst.attnVsRef, r.attnVsRef), max(worst.vsAttn, r.vsAttn)
				if r.vsRef > prefillBound || r.vsAttn > prefillBound || r.touched > 0 {
					t.Errorf("%s: NMSE %.3g against the reference, %.3g against Attention (bound %g; Attention %.3g); %d values of uncovered rows written",
						name, r.vsRef, r.vsAttn, prefillBound, r.attnVsRef, r.touched)
				}
			}
			lengths := prefillLengths
			if hd == 256 {
				lengths = []int{1, 64, 65, 513}
			}
			for _, group := range []int{1, 4, 8} {
				heads := group * kvHeads
				for _, n := range lengths {
					for _, pos0 := range []int{0, 300} {
						segs := []prefillSegment{{1, pos0, n}}
						check(fmt.Sprintf("group %d, %d rows from %d", group, n, pos0), runPrefill(t, rng, c, heads, segs, PrefillTileRows, nil, 1, false, PrefillScores{}))
					}
				}
				mixed := []prefillSegment{{0, 0, 100}, {2, 5, 1}, {-1, 0, 1}, {1, 20, 70}, {3, 1099, 1}, {1, 90, 3}}
				// The padding row as a sequence past the cache, then unused
				// entries (zeros), all skipped.
				bad := []PrefillTile{{Row0: 101, Rows: 1, Seq: 4, Pos0: 0}, {}, {}}
				for _, tile := range []int{PrefillTileRows, 16, 200} {
					check(fmt.Sprintf("group %d, mixed batch in tiles of %d", group, tile), runPrefill(t, rng, c, heads, mixed, tile, bad, 1, false, PrefillScores{}))
				}
				check(fmt.Sprintf("group %d, mixed batch, MaxRows the batch", group), runPrefill(t, rng, c, heads, mixed, PrefillTileRows, bad, 1, true, PrefillScores{}))
				check(fmt.Sprintf("group %d, sharp softmax", group), runPrefill(t, rng, c, heads, []prefillSegment{{0, 200, 130}}, PrefillTileRows, nil, 4, false, PrefillScores{}))
			}
			t.Logf("largest NMSE: %.3g against the f64 reference (Attention %.3g), %.3g against Attention", worst.vsRef, worst.attnVsRef, worst.vsAttn)
		})
	}
}

// TestGPUAttentionPrefillArch checks AttentionPrefill with the
// architectures' scores (gemma2: a scale, soft-capped logits, a window on
// alternate layers; phi3: heads of 96, a window) against the f64
// reference and AttentionArch with the same terms (NMSE ≤ prefillBound
// each): prompts from position 0 and continuing a prefix of 300 past the
// window, mixed batches in tiles of 64 and 16 rows, windows shorter than
// a K/V tile, across tiles and longer than the context.
func TestGPUAttentionPrefillArch(t *testing.T) {
	const ctx, kvHeads = 1100, 2
	cases := []struct {
		hd, group int
		sc        PrefillScores
	}{
		{16, 2, PrefillScores{Scale: 0.25, Cap: 5, Window: 8}}, // the golden gemma2's
		{64, 4, PrefillScores{Scale: 0.1, Cap: 2.5}},
		{96, 1, PrefillScores{Window: 37}},
		{96, 1, PrefillScores{Scale: 0.102, Window: 2047}},
		{128, 4, PrefillScores{Scale: 0.08, Cap: 30, Window: 33}},
		{256, 2, PrefillScores{Scale: 0.0625, Cap: 50, Window: 100}}, // Gemma-2-9B's heads
		{256, 1, PrefillScores{Cap: 3, Window: 5000}},
	}
	for _, k := range cases {
		t.Run(fmt.Sprintf("d%d_g%d_%+v", k.hd, k.group, k.sc), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(19, uint64(k.hd+k.sc.Window)))
			g := newBuffers(t)
			c := newPrefillCache(g, rng, kvHeads, k.hd, ctx)
			heads := k.group * kvHeads
			mixed := []prefillSegment{{0, 0, 100}, {2, 5, 1}, {-1, 0, 1}, {1, 20, 70}, {3, 1099, 1}, {1, 90, 3}}
			runs := []struct {
				name  string
				segs  []prefillSegment
				tile  int
				scale float32
			}{
				{"65 rows from 0", []prefillSegment{{1, 0, 65}}, PrefillTileRows, 4},
				{"130 rows from 300", []prefillSegment{{1, 300, 130}}, PrefillTileRows, 4},
				{"mixed batch, tiles of 64", mixed, PrefillTileRows, 4},
				{"mixed batch, tiles of 16", mixed, 16, 4},
				{"513 rows from 0, q unscaled", []prefillSegment{{0, 0, 513}}, PrefillTileRows, 1},
			}
			for _, x := range runs {
				name, r := x.name, runPrefill(t, rng, c, heads, x.segs, x.tile, nil, x.scale, x.tile == 16, k.sc)
				t.Logf("%s: NMSE %.3g against the reference, %.3g against AttentionArch", name, r.vsRef, r.vsAttn)
				if r.vsRef > prefillBound || r.vsAttn > prefillBound || r.touched > 0 {
					t.Errorf("%s: NMSE %.3g against the reference, %.3g against AttentionArch (bound %g; AttentionArch %.3g); %d values of uncovered rows written",
						name, r.vsRef, r.vsAttn, prefillBound, r.attnVsRef, r.touched)
				}
			}
		})
	}
}

// TestGPUAttentionPrefillRefuses checks that AttentionPrefill returns an
// error, launching nothing, for what it cannot take, and that an op with
// no tiles writes nothing.
func TestGPUAttentionPrefillRefuses(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	g := newBuffers(t)
	good := func(hd, heads, kvHeads int) AttentionPrefillOp {
		c := newPrefillCache(g, rng, kvHeads, hd, 32).dev
		return AttentionPrefillOp{Cache: c, Q: g.poisoned(4, heads*hd), Out: g.poisoned(4, heads*hd), Heads: heads,
			Tiles: g.i32([]int32{0, 4, 0, 0}).Ptr, NumTiles: 1, MaxRows: 4}
	}
	cases := []struct {
		name string
		op   func() AttentionPrefillOp
	}{
		{"head of 72", func() AttentionPrefillOp { return good(72, 4, 2) }},
		{"head of 8", func() AttentionPrefillOp { return good(8, 4, 2) }},
		{"heads not a multiple of KV heads", func() AttentionPrefillOp { op := good(64, 4, 2); op.Heads = 3; return op }},
		{"16 heads per KV head", func() AttentionPrefillOp { return good(64, 16, 1) }},
		{"q of the wrong width", func() AttentionPrefillOp { op := good(64, 4, 2); op.Q.Cols--; return op }},
		{"out of other rows", func() AttentionPrefillOp { op := good(64, 4, 2); op.Out.Rows = 3; return op }},
		{"MaxRows past the batch", func() AttentionPrefillOp { op := good(64, 4, 2); op.MaxRows = 5; return op }},
		{"MaxRows 0", func() AttentionPrefillOp { op := good(64, 4, 2); op.MaxRows = 0; return op }},
		{"no tile table", func() AttentionPrefillOp { op := good(64, 4, 2); op.Tiles = 0; return op }},
		{"too many tiles", func() AttentionPrefillOp { op := good(64, 4, 2); op.NumTiles = 65536; return op }},
		{"q misaligned", func() AttentionPrefillOp {
			op := good(64, 4, 2)
			op.Q.Ptr += 4
			return op
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := dev.AttentionPrefill(c.op()); err == nil {
				t.Error("no error")
			} else {
				t.Log(err)
			}
		})
	}
	op := good(64, 4, 2)
	op.NumTiles = 0
	if err := dev.AttentionPrefill(op); err != nil {
		t.Fatalf("no tiles: %v", err)
	}
	for i, v := range read(t, op.Out) {
		if !math.IsNaN(float64(v)) {
			t.Fatalf("no tiles: out[%d] = %g written", i, v)
		}
	}
}

// BenchmarkGPUAttentionPrefill times AttentionPrefill and Attention on the
// same 512 rows of one prompt (32 heads over 8 KV heads, heads of 128 and
// 64 values), from position 0 and continuing a cached prefix of 3584
// positions, and reports each one's TFLOP/s: 4·heads·headDim·Σ(pos+1)
// (Q·Kᵀ and P·V over the positions each row attends to) per call.
func BenchmarkGPUAttentionPrefill(b *testing.B) {
	const rows, heads, kvHeads = 512, 32, 8
	for _, hd := range []int{128, 64} {
		for _, pos0 := range []int{0, 3584} {
			rng := rand.New(rand.NewPCG(5, uint64(hd)))
			g := newBuffers(b)
			ctx := pos0 + rows
			kvdim := kvHeads * hd
			kb := g.f32(randF32(rng, ctx*kvdim), ctx, kvdim)
			vb := g.f32(randF32(rng, ctx*kvdim), ctx, kvdim)
			c := DevKVCache{K: kb.Ptr, V: vb.Ptr, MaxSeqs: 1, Ctx: ctx, KVHeads: kvHeads, HeadDim: hd}
			seq, pos := prefillBatch([]prefillSegment{{0, pos0, rows}})
			q := g.f32(randF32(rng, rows*heads*hd), rows, heads*hd)
			out := g.poisoned(rows, heads*hd)
			tiles := PrefillTiles(seq, pos, PrefillTileRows)
			words, maxRows := PrefillTileTable(tiles)
			op := AttentionPrefillOp{Cache: c, Q: q, Out: out, Heads: heads, Tiles: g.i32(words).Ptr, NumTiles: len(tiles), MaxRows: maxRows}
			pd, sd := g.i32(pos), g.i32(seq)
			scratch := g.poisoned(1, AttentionScratch(c, rows, heads))
			var attended float64
			for _, p := range pos {
				attended += float64(p) + 1
			}
			flops := 4 * float64(heads) * float64(hd) * attended
			for _, path := range []struct {
				name string
				run  func() error
			}{
				{"prefill", func() error { return dev.AttentionPrefill(op) }},
				{"attention", func() error { return dev.Attention(c, q, out, heads, pd, sd, scratch) }},
			} {
				b.Run(fmt.Sprintf("d%d/B%d_pos%d/%s", hd, rows, pos0, path.name), func(b *testing.B) {
					timeLaunches(b, flops, path.run)
					b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/op")
				})
			}
		}
	}
}

// TestGPUAttentionPrefillBatchInvariant checks that a row's result does
// not depend on the batch around it: two prompts (one continuing a
// prefix), a decode row and a padding row, in tiles of 64, 16, 5 and 1 row
// (each row alone), give the same bits in every row, for heads of 64, 128
// and 96 with 4 query heads per KV head.
func TestGPUAttentionPrefillBatchInvariant(t *testing.T) {
	for _, hd := range []int{64, 128, 96} {
		t.Run(fmt.Sprintf("d%d", hd), func(t *testing.T) {
			const kvHeads, heads = 2, 8
			rng := rand.New(rand.NewPCG(12, uint64(hd)))
			g := newBuffers(t)
			c := newPrefillCache(g, rng, kvHeads, hd, 600)
			seq, pos := prefillBatch([]prefillSegment{{1, 300, 130}, {2, 77, 1}, {-1, 0, 1}, {0, 0, 65}})
			B := len(seq)
			q := g.f32(randF32(rng, B*heads*hd), B, heads*hd)
			var first []float32
			for _, tile := range []int{64, 16, 5, 1} {
				tiles := PrefillTiles(seq, pos, tile)
				words, maxRows := PrefillTileTable(tiles)
				out := g.poisoned(B, heads*hd)
				op := AttentionPrefillOp{Cache: c.dev, Q: q, Out: out, Heads: heads, Tiles: g.i32(words).Ptr, NumTiles: len(tiles), MaxRows: maxRows}
				if err := dev.AttentionPrefill(op); err != nil {
					t.Fatal(err)
				}
				got := read(t, out)
				if first == nil {
					first = got
					continue
				}
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(first[i]) {
						t.Fatalf("tiles of %d: value %d (row %d) is %g, %g in tiles of 64", tile, i, i/(heads*hd), got[i], first[i])
					}
				}
			}
		})
	}
}

// TestGPUAttentionPrefillLayout checks that the Go side sizes the prefill
// launches as attention_prefill.cu compiles them: positions per tile and
// shared memory per head size, and the query rows per block.
func TestGPUAttentionPrefillLayout(t *testing.T) {
	g := newBuffers(t)
	out := g.i32(make([]int32, 7))
	if err := dev.launch("attention_prefill_layout", cuda.Dim3{X: 1}, cuda.Dim3{X: 1}, 0, cuda.P(out.Ptr)); err != nil {
		t.Fatal(err)
	}
	got := readI32(t, out)
	for i, dim := range []int{64, 128, 256} {
		bn, _ := prefillWalk(dim)
		if int(got[2*i]) != bn || int(got[2*i+1]) != prefillShared(dim) {
			t.Errorf("head %d: %d positions per tile and %d bytes of shared memory in C, %d and %d in Go", dim, got[2*i], got[2*i+1], bn, prefillShared(dim))
		}
	}
	if got[6] != prefillM {
		t.Errorf("PF_M %d, prefillM %d", got[6], prefillM)
	}
}
