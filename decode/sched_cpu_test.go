package decode

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"llmserve/gguf"
	"llmserve/internal/shared"
	"llmserve/model/tokenizer"
)

// tokVocab adapts the tokenizer to the scheduler.
type tokVocab struct{ t *tokenizer.Tokenizer }

func (v tokVocab) IsEOG(id int32) bool         { return v.t.IsEOG(id) }
func (v tokVocab) NewTextDecoder() TextDecoder { return v.t.NewStreamDecoder() }

func storiesScheduler(t *testing.T, slots, ctx int) *Scheduler {
	t.Helper()
	return storiesSchedulerOn(t, slots, ctx, func(e Engine) Engine { return e })
}

// storiesSchedulerOn is storiesScheduler over wrap of the CPU engine.
func storiesSchedulerOn(t *testing.T, slots, ctx int, wrap func(Engine) Engine) *Scheduler {
	t.Helper()
	eng := wrap(openEngine(t, "models/stories260K.gguf", CPUOptions{Context: ctx, MaxSeqs: slots, Threads: 1}))
	return startStoriesScheduler(t, eng, SchedulerConfig{MaxQueue: 64, StepTokens: 24})
}

// startStoriesScheduler starts a scheduler with cfg over eng, an engine of
// stories260K, with the model's tokenizer as its vocabulary.
func startStoriesScheduler(t *testing.T, eng Engine, cfg SchedulerConfig) *Scheduler {
	t.Helper()
	f, err := gguf.Open(shared.Path(t, "models/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return startSchedulerVocab(t, eng, tokVocab{tok}, cfg)
}

// TestSchedulerCPUGolden runs the golden greedy continuation of BOS on
// stories260K in 4 slots at once, next to seeded sampled requests: each
// greedy request must give llama.cpp's 255 tokens.
func TestSchedulerCPUGolden(t *testing.T) {
	want := storiesGreedyIDs(t)
	s := storiesScheduler(t, 4, len(want)+1)
	var wg sync.WaitGroup
	got := make([]result, 6)
	for i := range got {
		r := Request{Prompt: []int32{1}, IgnoreEOS: true}
		if i%2 == 1 {
			r.Sampling = SamplerParams{Temperature: 1, Seed: uint64(i)}
			r.MaxTokens = 40
		}
		st, err := s.Submit(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { got[i] = collect(t, st) })
	}
	wg.Wait()
	for i := 0; i < len(got); i += 2 {
		if !slices.Equal(got[i].tokens, want) || got[i].final.FinishReason != "length" {
			t.Errorf("greedy request %d: %d tokens (%s), first difference at %s", i, len(got[i].tokens),
				got[i].final.FinishReason, firstDiff(got[i].tokens, want))
		}
	}
}

// TestSchedulerCPUBatchingInvariance runs seeded requests on stories260K
// one at a time and then 32 at once in 8 slots: the tokens must match.
func TestSchedulerCPUBatchingInvariance(t *testing.T) {
	const n = 32
	reqs := make([]Request, n)
	for i := range reqs {
		prompt := []int32{1}
		for j := range i % 7 {
			prompt = append(prompt, int32(300+(i*13+j*7)%200))
		}
		reqs[i] = Request{Prompt: prompt, MaxTokens: 20 + i%11,
			Sampling: SamplerParams{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, RepeatPenalty: 1.1, PenaltyLastN: 64, Seed: uint64(7 * i)}}
	}
	alone := storiesScheduler(t, 1, 64)
	want := make([]result, n)
	for i, r := range reqs {
		st, err := alone.Submit(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = collect(t, st)
	}
	s := storiesScheduler(t, 8, 64)
	got := make([]result, n)
	var wg sync.WaitGroup
	for i, r := range reqs {
		st, err := s.Submit(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { got[i] = collect(t, st) })
	}
	wg.Wait()
	for i := range got {
		if !slices.Equal(got[i].tokens, want[i].tokens) || got[i].text != want[i].text {
			t.Errorf("request %d: batched %q, alone %q (first token difference at %s)", i, got[i].text, want[i].text,
				firstDiff(got[i].tokens, want[i].tokens))
		}
	}
}

func firstDiff(a, b []int32) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprint(i)
		}
	}
	if len(a) != len(b) {
		return fmt.Sprint(min(len(a), len(b)))
	}
	return "none"
}

// hostPicker is a Picker over a host engine: it picks each row with a
// fresh Sampler of the pick's parameters and its draw (what a device must
// do), and leaves every third picked row to the caller, as a device does
// with a pick it cannot apply.
type hostPicker struct {
	Engine
	n int // rows seen
}

func (h *hostPicker) ForwardPick(b *Batch, picks []*Pick, toks []int32, logits []float32) error {
	if err := h.Forward(b, logits); err != nil {
		return err
	}
	V := h.VocabSize()
	for r, p := range picks {
		h.n++
		if p == nil || h.n%3 == 0 {
			toks[r] = -1
			continue
		}
		smp, err := NewSampler(SamplerParams{Temperature: p.Temperature, TopK: p.TopK, TopP: p.TopP, MinP: p.MinP}, V)
		if err != nil {
			return err
		}
		got, err := smp.SampleDrawn(logits[r*V:(r+1)*V], p.U)
		if err != nil {
			return err
		}
		toks[r] = got.Token
	}
	return nil
}

// TestSchedulerPicker runs greedy, seeded and penalized requests through
// an engine that picks tokens itself, and through the plain engine: the
// texts must match, whether a row was picked by the engine, left to the
// host by it, or never offered to it (penalties, logprobs).
func TestSchedulerPicker(t *testing.T) {
	reqs := []Request{
		{Prompt: []int32{1}, MaxTokens: 30},
		{Prompt: []int32{1, 400}, MaxTokens: 30, Sampling: SamplerParams{Temperature: 0.9, Seed: 3}},
		{Prompt: []int32{1}, MaxTokens: 30, Sampling: SamplerParams{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, Seed: 4}},
		{Prompt: []int32{1, 300}, MaxTokens: 30, Sampling: SamplerParams{Temperature: 0.8, RepeatPenalty: 1.2, PenaltyLastN: 16, Seed: 5}},
		{Prompt: []int32{1}, MaxTokens: 30, Sampling: SamplerParams{Temperature: 1.2, TopP: 0.9, Logprobs: true, Seed: 6}},
	}
	run := func(s *Scheduler) []result {
		out := make([]result, len(reqs))
		var wg sync.WaitGroup
		for i, r := range reqs {
			r.IgnoreEOS = true
			st, err := s.Submit(context.Background(), r)
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() { out[i] = collect(t, st) })
		}
		wg.Wait()
		return out
	}
	want := run(storiesScheduler(t, 4, 64))
	picker := &hostPicker{}
	got := run(storiesSchedulerOn(t, 4, 64, func(e Engine) Engine { picker.Engine = e; return picker }))
	for i := range got {
		if !slices.Equal(got[i].tokens, want[i].tokens) {
			t.Errorf("request %d: with a picking engine %q, without %q", i, got[i].text, want[i].text)
		}
	}
	if picker.n == 0 {
		t.Errorf("the scheduler never offered a row to the picking engine")
	}
}
