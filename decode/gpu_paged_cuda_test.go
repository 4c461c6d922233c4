//go:build cuda

package decode

import (
	"slices"
	"strings"
	"testing"

	"llmserve/internal/nmse"
	"llmserve/model"
)

func openPagedGPU(t testing.TB, m *model.Model, opts GPUOptions) *PagedGPUEngine {
	t.Helper()
	e, err := NewPagedGPUEngine(m, opts)
	return opened(t, e, err)
}

// unfuseRope frees e's rotation epilogues, so that its steps rotate and
// write the pool after the Q/K/V product (ropeStore), as they did before
// the epilogue fused.
func unfuseRope(t testing.TB, e *GPUEngine) {
	t.Helper()
	for _, r := range e.rope {
		if err := r.Free(); err != nil {
			t.Fatal(err)
		}
	}
	e.rope = nil
}

// scatteredTables gives slot s of seqs the blocks of a context of ctx
// positions in reverse order from the pool's end, so that a sequence's
// positions cross blocks that are neither consecutive nor in order.
func scatteredTables(l KVLayout, seqs, ctx int) [][]int32 {
	per := l.BlocksFor(ctx)
	t := make([][]int32, seqs)
	for s := range t {
		for j := 0; j < per; j++ {
			t[s] = append(t[s], int32(l.Blocks-1-(s*per+j)))
		}
	}
	return t
}

// TestGPUPagedGolden runs every golden model over the paged f16 pool and
// over the f32 cache (both with the preview kernels): the 16 golden
// tokens in one step, in steps of 1..5 tokens, and a prompt of 200 tokens
// in one step (the prompt attention on the tensor cores), with the
// default fixed tables and with scattered block tables of blocks of 16;
// the logits agree within what the CPU engine's f16 cache may differ from
// its f32 one (kvLogitsTolerance: the pool rounds every K and V value to
// f16, which quantized weights turn into whole steps of their 8-bit
// activations now and then; a misplaced cell gives an NMSE near 1) and
// stay within the golden tolerance of llama.cpp's.
func TestGPUPagedGolden(t *testing.T) {
	forEachGolden(t, func(t *testing.T, dir, name string) {
		m := loadModel(t, "golden/"+name+".gguf")
		const ctx = 256
		flat := openGPU(t, m, GPUOptions{Context: ctx, MaxSeqs: 2})
		paged := openPagedGPU(t, m, GPUOptions{Context: ctx, MaxSeqs: 2, BlockSize: 16})
		l := paged.KVLayout()
		if l.K != KVF16 || l.V != KVF16 || l.Blocks != 2*ctx/16 {
			t.Fatalf("pool %+v, want f16 blocks of 16 for 2 contexts of %d", l, ctx)
		}
		prompt := prefillTokens(200, m.Vocab)
		check := func(what string, got, want []float32) {
			t.Helper()
			e := nmse.Of(got, want)
			t.Logf("%s: NMSE %.3g paged against f32", what, e)
			if bound := pagedBound(name); !(e <= bound) {
				t.Errorf("%s: NMSE %.3g paged against f32 exceeds %.0e", what, e, bound)
			}
		}
		ref := readF32s(t, dir+"/"+name+".logits.f32")
		one := forwardAll(t, paged, goldenTokens, 0)
		check("golden tokens, one step", one, forwardAll(t, flat, goldenTokens, 0))
		if e, tol := nmse.Of(one, ref), goldenTolerance(name); !(e <= max(tol, 1e-4)) {
			t.Errorf("golden tokens over the pool: NMSE %.3g against llama.cpp exceeds %.0e", e, max(tol, 1e-4))
		}
		steps := stepwiseSeq(t, paged, goldenTokens, stepSizes, 1)
		check("golden tokens, stepwise", steps, stepwiseSeq(t, flat, goldenTokens, stepSizes, 1))
		// Steps of fewer than 16 tokens write the pool from inside the
		// Q/K/V product (NewPagedRopeEpilogue); without the epilogue the
		// write runs after it: the same cells, so the same logits bit for
		// bit.
		apart := openPagedGPU(t, m, GPUOptions{Context: ctx, MaxSeqs: 2, BlockSize: 16})
		unfuseRope(t, apart.GPUEngine)
		if n := bitsDiffer(stepwiseSeq(t, apart, goldenTokens, stepSizes, 1), steps); n != 0 {
			t.Errorf("stepwise with the pool's write fused into the product: %d logits differ from the write after it", n)
		}
		check("200-token prompt, last row", promptLast(t, paged, prompt), promptLast(t, flat, prompt))

		// The same through scattered tables: the logits of the fixed ones.
		tables := scatteredTables(l, 2, ctx)
		var b Batch
		for i, tok := range goldenTokens {
			b.Add(tok, int32(i), 1, true)
		}
		b.Blocks = tables
		out := make([]float32, len(goldenTokens)*m.Vocab)
		if err := paged.Forward(&b, out); err != nil {
			t.Fatal(err)
		}
		if d := bitsDiffer(out, forwardAll(t, paged, goldenTokens, 1)); d != 0 {
			t.Errorf("scattered tables: %d of %d logits differ from the fixed tables'", d, len(out))
		}
	})
}

// promptLast runs toks as one prompt in slot 0 with only the last row's
// logits wanted (one step over gpuMaxBatch tokens: the prompt attention)
// and returns them.
func promptLast(t *testing.T, e Engine, toks []int32) []float32 {
	t.Helper()
	var b Batch
	for i, tok := range toks {
		b.Add(tok, int32(i), 0, i == len(toks)-1)
	}
	out := make([]float32, e.VocabSize())
	if err := e.Forward(&b, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestGPUPagedGraphCheck runs the golden models over the pool with the
// graph check (each step eagerly and from its graph, bit for bit) and
// compares the logits with an eager paged engine's.
func TestGPUPagedGraphCheck(t *testing.T) {
	forEachGolden(t, func(t *testing.T, dir, name string) {
		m := loadModel(t, "golden/"+name+".gguf")
		opts := GPUOptions{Context: 64, BlockSize: 16}
		eager := openPagedGPU(t, m, opts)
		want := stepwise(t, eager, goldenTokens, stepSizes)
		opts.GraphCheck = true
		checked := openPagedGPU(t, m, opts)
		if d := bitsDiffer(stepwise(t, checked, goldenTokens, stepSizes), want); d != 0 {
			t.Errorf("%d of %d logits differ from the eager engine's", d, len(want))
		}
		if c := checked.GraphStats(); c.Replays != uint64(len(stepSizes)) {
			t.Errorf("%d replays, want %d", c.Replays, len(stepSizes))
		}
	})
}

// gpuPagedScheduler runs a scheduler over stories260K on a paged GPU
// engine in deterministic mode.
func gpuPagedScheduler(t *testing.T, opts GPUOptions, cfg SchedulerConfig) *Scheduler {
	t.Helper()
	eng := openPagedGPU(t, loadModel(t, "models/stories260K.gguf"), opts)
	return startStoriesScheduler(t, eng, cfg)
}

// TestGPUPagedPrefixCache checks prompt reuse on the GPU pool in
// deterministic mode: a repeated prompt and a second chat turn take
// their full blocks from the cache (all but the block of the last
// position) and give the tokens and log-probs of a cold run, bit for bit.
func TestGPUPagedPrefixCache(t *testing.T) {
	const bs = 16
	opts := GPUOptions{Context: 128, MaxSeqs: 2, BlockSize: bs, Deterministic: true, Graphs: true}
	s := gpuPagedScheduler(t, opts, SchedulerConfig{MaxQueue: 8})
	cold := gpuPagedScheduler(t, opts, SchedulerConfig{MaxQueue: 8, NoPrefixCache: true})
	first := Request{Prompt: storiesTokens(50), MaxTokens: 20, IgnoreEOS: true, Sampling: SamplerParams{Logprobs: true}}
	turn1 := runOne(t, s, first)
	second := first
	second.Prompt = append(append(slices.Clone(first.Prompt), turn1.tokens...), storiesTokens(6)[1:]...)
	checkReuse(t, s, cold, []reuseCase{
		{"same prompt", first, (50 - 1) / bs * bs},
		{"second turn", second, uint64((len(second.Prompt) - 1) / bs * bs)},
	})
}

// TestGPUPagedExhaustion runs 16 greedy requests in 8 slots over a GPU
// pool of one context in deterministic mode: they queue and are
// preempted, none fails, and each gives what it gives over a pool with
// room for every slot.
func TestGPUPagedExhaustion(t *testing.T) {
	const ctx, bs = 128, 16
	reqs := make([]Request, 16)
	for i := range reqs {
		reqs[i] = Request{Prompt: storiesTokens(1 + i*5%40), MaxTokens: 30 + i*7%40, IgnoreEOS: true, Sampling: SamplerParams{Logprobs: true}}
		if i%3 == 0 {
			reqs[i].Prompt = storiesTokens(35)
		}
	}
	opts := GPUOptions{Context: ctx, MaxSeqs: 8, BlockSize: bs, Deterministic: true, Graphs: true}
	want := runAll(t, gpuPagedScheduler(t, opts, SchedulerConfig{MaxQueue: 64, StepTokens: 64}), reqs)
	l, err := gpuKVLayout(loadModel(t, "models/stories260K.gguf"), ctx, 1, bs, 0)
	if err != nil {
		t.Fatal(err)
	}
	opts.KVMemory = l.PoolBytes() // one context
	small := gpuPagedScheduler(t, opts, SchedulerConfig{MaxQueue: 64, StepTokens: 64})
	got := runAll(t, small, reqs)
	for i := range got {
		if !sameScored(got[i], want[i]) {
			t.Errorf("request %d over the small pool: %v (%v), over the big one: %v", i, got[i].tokens, got[i].final.Err, want[i].tokens)
		}
	}
	m := small.Metrics().Snapshot()
	t.Logf("small pool: %d preemptions, %d prompt tokens from the cache", m.Preemptions, m.CachedPrompt)
	if m.Finished["length"] != uint64(len(reqs)) || m.KVBlocksUsed != 0 || m.Preemptions == 0 {
		t.Errorf("finished %v, %d blocks still in use, %d preemptions (want some)", m.Finished, m.KVBlocksUsed, m.Preemptions)
	}
}

// pagedBound is the NMSE the logits over the paged f16 pool may reach
// against the f32 cache's: what the CPU engine's f16 cache may differ from
// its f32 one (kvLogitsTolerance), but for BF16 weights, whose inputs the
// 16-bit tensor-core products round to bf16 from 16 tokens on, which turns
// the cache's rounding into steps of 8 mantissa bits now and then
// (measured 4.2e-6 on the golden prompt).
func pagedBound(name string) float64 {
	if strings.HasSuffix(name, "BF16") {
		return 1e-5
	}
	return kvLogitsTolerance(KVF16, name)
}
