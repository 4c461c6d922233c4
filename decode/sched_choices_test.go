package decode

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
)

// copyingEngine is a fakeEngine that is a SeqCopier: it copies the
// history its logits depend on, so a wrong copy changes the tokens, and
// the fake's check that positions are written without gaps still holds.
type copyingEngine struct {
	*fakeEngine
	copies int // CopySeq calls
}

func (e *copyingEngine) CopySeq(src, dst int32, n int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if n > e.filled[src] {
		return fmt.Errorf("fake: copy %d positions of seq %d, which has %d", n, src, e.filled[src])
	}
	copy(e.hist[dst][:n], e.hist[src][:n])
	e.filled[dst] = n
	e.copies++
	return nil
}

// choicesAndSeparate runs r as n choices on one scheduler and as n
// separate requests with seeds Seed+i on another, and compares them.
func choicesAndSeparate(t *testing.T, choices, separate *Scheduler, r Request, n int) {
	t.Helper()
	streams, err := choices.SubmitChoices(context.Background(), r, n)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]result, n)
	var wg sync.WaitGroup
	for i, st := range streams {
		wg.Go(func() { got[i] = collect(t, st) })
	}
	wg.Wait()
	for i := range n {
		req := r
		req.Sampling.Seed += uint64(i)
		want := run(t, separate, req)
		if got[i].final.Err != nil || !slices.Equal(got[i].tokens, want.tokens) || got[i].text != want.text {
			t.Errorf("choice %d: %q (%v), separate request with seed %d: %q", i, got[i].text, got[i].final.Err, req.Sampling.Seed, want.text)
		}
	}
}

// TestSubmitChoicesSharesPrefill checks on the fake engine that choices
// copy the prompt (all but its last position, n-1 times) and give the
// tokens of separate requests, with prompts longer than a step and slots
// fewer than choices.
func TestSubmitChoicesSharesPrefill(t *testing.T) {
	tests := []struct {
		name    string
		slots   int
		n       int
		prompt  int
		sampler SamplerParams
		shared  uint64
	}{
		{"greedy", 4, 4, 20, SamplerParams{}, 3 * 19},
		{"seeded", 4, 3, 100, SamplerParams{Temperature: 0.9, TopK: 20, Seed: 7}, 2 * 99},
		// Two slots for four choices: the last two start after the first
		// ones end, when the leader's slot is gone: they prefill alone.
		{"more choices than slots", 2, 4, 30, SamplerParams{Temperature: 1, Seed: 3}, 29},
		{"one-token prompt", 4, 3, 1, SamplerParams{Temperature: 1, Seed: 3}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng := &copyingEngine{fakeEngine: newFakeEngine(32, 256, tt.slots)}
			choices := startScheduler(t, eng, SchedulerConfig{MaxQueue: 8, StepTokens: 48})
			separate := startScheduler(t, newFakeEngine(32, 256, tt.slots), SchedulerConfig{MaxQueue: 8})
			r := Request{Prompt: prompt(tt.prompt, 5), MaxTokens: 12, Sampling: tt.sampler, IgnoreEOS: true}
			choicesAndSeparate(t, choices, separate, r, tt.n)
			if got := choices.Metrics().Snapshot().SharedPrompt; got != tt.shared {
				t.Errorf("%d prompt tokens shared, want %d", got, tt.shared)
			}
		})
	}
}

// TestSubmitChoicesWithoutCopier: an engine that cannot copy runs each
// choice's prefill.
func TestSubmitChoicesWithoutCopier(t *testing.T) {
	choices := startScheduler(t, newFakeEngine(32, 128, 4), SchedulerConfig{MaxQueue: 8})
	separate := startScheduler(t, newFakeEngine(32, 128, 4), SchedulerConfig{MaxQueue: 8})
	r := Request{Prompt: prompt(10, 2), MaxTokens: 10, Sampling: SamplerParams{Temperature: 0.8, Seed: 11}, IgnoreEOS: true}
	choicesAndSeparate(t, choices, separate, r, 3)
	if got := choices.Metrics().Snapshot().SharedPrompt; got != 0 {
		t.Errorf("%d prompt tokens shared without a SeqCopier", got)
	}
}

// TestSubmitChoicesCPU checks shared prefill on the CPU engine with
// stories260K: n choices (greedy and seeded) share the leader's full
// blocks and give the tokens of n separate requests with seeds Seed+i.
func TestSubmitChoicesCPU(t *testing.T) {
	choices := storiesScheduler(t, 4, 96)
	separate := storiesScheduler(t, 4, 96)
	p := []int32{1, 403, 411, 263, 931 % 512, 29, 363, 278, 1629 % 512, 322, 263, 2217 % 512}
	for len(p) < 44 { // more than one block of the paged pool
		p = append(p, p[1+len(p)%11])
	}
	bs := choices.paged.layout.BlockSize
	want := uint64(2 * ((len(p) - 1) / bs * bs)) // full blocks but the one with the last position
	for _, tt := range []struct {
		name string
		s    SamplerParams
	}{
		{"greedy", SamplerParams{}},
		{"seeded", SamplerParams{Temperature: 0.9, TopK: 40, TopP: 0.95, Seed: 21}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := choices.Metrics().Snapshot().SharedPrompt
			r := Request{Prompt: p, MaxTokens: 40, Sampling: tt.s, IgnoreEOS: true}
			choicesAndSeparate(t, choices, separate, r, 3)
			if got := choices.Metrics().Snapshot().SharedPrompt - before; got != want || want == 0 {
				t.Errorf("%d prompt tokens shared, want %d", got, want)
			}
		})
	}
}
