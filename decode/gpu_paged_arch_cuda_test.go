//go:build cuda

package decode

import (
	"path/filepath"
	"slices"
	"testing"

	"llmserve/internal/nmse"
	"llmserve/model"
)

// openPagedArchGPU opens the golden-arch model name on a paged GPU engine
// (the executor over the pool) with blocks of 16.
func openPagedArchGPU(t *testing.T, m *model.Model, opts GPUOptions) *PagedGPUEngine {
	t.Helper()
	opts.BlockSize = 16
	e := openPagedGPU(t, m, opts)
	if e.exec == nil || e.paged == nil {
		t.Fatal("the engine does not run the description's executor over the pool")
	}
	return e
}

// TestGPUPagedGoldenArch runs the golden-arch models (gemma2 with its
// window of 8 and soft-caps, phi3, the expert mixture: the executor of
// the description) over the paged f16 pool, eagerly and from graphs: the
// 16 golden tokens in one batch, token by token and in mixed steps, and a
// 100-token prompt (every row wanted, and as one step over gpuMaxBatch
// with the last row wanted beside another sequence's token). The logits
// stay within the golden-arch tolerance of the CPU engine's (whose cache
// is f16 too), of llama.cpp's and of the GPU engine's over its f32 cache;
// graph replays equal the eager launches bit for bit, and scattered block
// tables give the fixed tables' logits bit for bit.
func TestGPUPagedGoldenArch(t *testing.T) {
	forEachGoldenArch(t, func(t *testing.T, dir, name string) {
		m := loadModel(t, "golden-arch/"+name+".gguf")
		V, tol := m.Vocab, goldenArchTolerance(name)
		want := cpuLogits(t, m, goldenTokens)
		ref := readF32s(t, filepath.Join(dir, name+".logits.f32"))
		const n = 100
		toks, wantPrompt := cpuPrompt(t, m, n, 128)
		flat := openGPU(t, m, GPUOptions{Context: 128, MaxSeqs: 3})
		flatOne := forwardAll(t, flat, goldenTokens, 0)
		within := func(what string, got, want []float32) {
			t.Helper()
			e := nmse.Of(got, want)
			t.Logf("%s: NMSE %.3g (tolerance %.0e)", what, e, tol)
			if !(e <= tol) {
				t.Errorf("%s: NMSE %.3g exceeds %.0e", what, e, tol)
			}
		}
		eager := map[string][]float32{}
		for _, graphs := range []bool{false, true} {
			e := openPagedArchGPU(t, m, GPUOptions{Context: 128, MaxSeqs: 3, Graphs: graphs})
			runs := []struct {
				how string
				got []float32
			}{
				{"one batch", forwardAll(t, e, goldenTokens, 0)},
				{"token by token", stepwiseSeq(t, e, goldenTokens, []int{1}, 1)},
				{"mixed steps", stepwiseSeq(t, e, goldenTokens, stepSizes, 2)},
			}
			for _, r := range runs {
				within(r.how+" vs the CPU engine", r.got, want)
				within(r.how+" vs llama.cpp", r.got, ref)
				within(r.how+" vs the f32 cache", r.got, flatOne)
				if !graphs {
					eager[r.how] = r.got
				} else if d := bitsDiffer(r.got, eager[r.how]); d != 0 {
					t.Errorf("%s: graph replay differs from eager launches in %d logits (max %g)", r.how, d, maxAbsDiff(r.got, eager[r.how]))
				}
			}
			all := forwardAll(t, e, toks, 0)
			if err := nmse.Of(all, wantPrompt); !(err <= tol) && !routingFlips(t, name, all, wantPrompt, V, tol) {
				t.Errorf("graphs=%v, %d-token prompt, every row wanted: NMSE %.3g vs the CPU engine exceeds %.0e", graphs, n, err, tol)
			}
			out := forwardBeside(t, e, toks)
			within("one wide step, last row", out[:V], wantPrompt[(n-1)*V:])
			within("one wide step, the token beside it", out[V:], wantPrompt[:V])
		}

		// Scattered block tables (blocks neither consecutive nor in order)
		// give the fixed tables' logits.
		e := openPagedArchGPU(t, m, GPUOptions{Context: 128, MaxSeqs: 3})
		var b Batch
		for i, tok := range goldenTokens {
			b.Add(tok, int32(i), 1, true)
		}
		b.Blocks = scatteredTables(e.KVLayout(), 3, 128)
		got := make([]float32, len(goldenTokens)*V)
		if err := e.Forward(&b, got); err != nil {
			t.Fatal(err)
		}
		if d := bitsDiffer(got, forwardAll(t, e, goldenTokens, 1)); d != 0 {
			t.Errorf("scattered tables: %d of %d logits differ from the fixed tables'", d, len(got))
		}
	})
}

// TestGPUPagedArchPrefixCache checks prompt reuse over the pool under the
// executor in deterministic mode, on gemma2 (a window of 8 on alternate
// layers and soft-capped logits) and the expert mixture: a repeated
// prompt and a second turn take their full blocks from the cache and give
// the tokens and log-probs of a cold run, bit for bit.
func TestGPUPagedArchPrefixCache(t *testing.T) {
	const bs = 16
	for _, name := range []string{"tiny-gemma2-Q8_0", "tiny-mixtral-Q8_0"} {
		t.Run(name, func(t *testing.T) {
			m := loadModel(t, "golden-arch/"+name+".gguf")
			opts := GPUOptions{Context: 128, MaxSeqs: 2, Deterministic: true, Graphs: true}
			start := func(cfg SchedulerConfig) *Scheduler {
				return startSchedulerVocab(t, openPagedArchGPU(t, m, opts), fakeVocab{}, cfg)
			}
			s := start(SchedulerConfig{MaxQueue: 8})
			cold := start(SchedulerConfig{MaxQueue: 8, NoPrefixCache: true})
			prompt := prefillTokens(50, m.Vocab)
			first := Request{Prompt: prompt, MaxTokens: 20, IgnoreEOS: true, Sampling: SamplerParams{Logprobs: true}}
			turn1 := runOne(t, s, first)
			second := first
			second.Prompt = append(append(slices.Clone(prompt), turn1.tokens...), prefillTokens(6, m.Vocab)...)
			checkReuse(t, s, cold, []reuseCase{
				{"same prompt", first, (50 - 1) / bs * bs},
				{"second turn", second, uint64((len(second.Prompt) - 1) / bs * bs)},
			})
		})
	}
}
