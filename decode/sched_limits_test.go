package decode

import (
	"context"
	"testing"
)

// TestSubmitClampsWindows: penalty windows longer than the context are cut
// to it at Submit (NewSampler alone refuses those past maxPenaltyLastN).
func TestSubmitClampsWindows(t *testing.T) {
	s := startScheduler(t, newFakeEngine(32, 128, 1), SchedulerConfig{MaxQueue: 2})
	seq, err := s.newSequence(context.Background(), Request{Prompt: prompt(3, 1), Sampling: SamplerParams{
		RepeatPenalty: 1.1, PenaltyLastN: maxPenaltyLastN, DRYMultiplier: 0.8, DRYBase: 1.75, DRYSequenceBreakers: []string{}}})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(seq.sampler.window); n != 128 {
		t.Errorf("penalty window of %d tokens, want the context of 128", n)
	}
	if n := seq.sampler.dry.limit; n != 128 {
		t.Errorf("DRY window of %d tokens, want the context of 128", n)
	}
	// Past the sampler's own bound, Submit still cuts it to the context.
	got := run(t, s, Request{Prompt: prompt(3, 1), MaxTokens: 5, Sampling: SamplerParams{RepeatPenalty: 1.1, PenaltyLastN: 1 << 30}})
	if got.final.Err != nil || len(got.tokens) == 0 {
		t.Errorf("penalty_last_n of 1<<30: %d tokens, %v", len(got.tokens), got.final.Err)
	}
}
