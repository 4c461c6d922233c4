package decode

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// TestStepCostBudget checks the prompt chunk a step beside decodes may
// take: unbounded before any large step is measured, without decodes or
// without a gap; then what the measured cost allows within the gap, never
// below minGapChunk and never above the step's budget.
func TestStepCostBudget(t *testing.T) {
	var c stepCost
	const gap = 80 * time.Millisecond
	if n := c.promptBudget(gap, 16, 496); n != 496 {
		t.Errorf("nothing measured: budget %d, want all 496", n)
	}
	c.observe(16, 10*time.Millisecond) // a decode step: the fixed cost
	if n := c.promptBudget(gap, 16, 496); n != 496 {
		t.Errorf("no large step measured: budget %d, want all 496", n)
	}
	c.observe(512, 512*200*time.Microsecond) // 0.2 ms a token
	// (80 - 10) ms / 0.2 ms = 350 tokens, less the 16 decodes.
	if n := c.promptBudget(gap, 16, 496); n != 334 {
		t.Errorf("budget %d, want 334", n)
	}
	for _, tc := range []struct {
		gap          time.Duration
		decodes, bud int
		want         int
		why          string
	}{
		{0, 16, 496, 496, "no gap asked"},
		{gap, 0, 512, 512, "no decodes running"},
		{gap, 16, 100, 100, "the step's budget is the smaller"},
		{5 * time.Millisecond, 16, 496, minGapChunk, "a gap below the fixed cost still lets the prompt progress"},
		{gap, 16, 10, 10, "a budget under minGapChunk stays"},
	} {
		if n := c.promptBudget(tc.gap, tc.decodes, tc.bud); n != tc.want {
			t.Errorf("%s: budget %d, want %d", tc.why, n, tc.want)
		}
	}
	// The averages follow new measurements.
	for range 50 {
		c.observe(512, 512*100*time.Microsecond)
	}
	if n := c.promptBudget(gap, 16, 1000); n < 650 || n > 690 {
		t.Errorf("after faster steps: budget %d, want about (80-10)/0.1-16 = 684", n)
	}
	c.observe(0, time.Second)
	c.observe(10, 0)
	if n := c.promptBudget(gap, 16, 1000); n < 650 || n > 690 {
		t.Errorf("empty or zero measurements changed the estimate: %d", n)
	}
}

// clockEngine is a fakeEngine whose steps take simulated time: 2 ms plus
// 1 ms a token, on a clock the scheduler reads (SchedulerConfig.Clock).
type clockEngine struct {
	*fakeEngine
	now atomic.Int64 // nanoseconds
}

func (e *clockEngine) Forward(b *Batch, out []float32) error {
	e.now.Add(int64(2*time.Millisecond + time.Duration(b.Len())*time.Millisecond))
	return e.fakeEngine.Forward(b, out)
}

func (e *clockEngine) clock() time.Time { return time.Unix(0, e.now.Load()) }

// TestSchedulerMaxDecodeGap runs a long prompt beside a running stream
// with MaxDecodeGap 40 ms on steps that take 2 ms plus 1 ms a token: once
// a large step has been measured, every step that carries the stream's
// token takes at most 40 simulated ms, and the prompt still finishes with
// the same tokens as without the bound.
func TestSchedulerMaxDecodeGap(t *testing.T) {
	run := func(gap time.Duration) ([]int32, []Batch) {
		eng := &clockEngine{fakeEngine: newFakeEngine(32, 2048, 2)}
		eng.gate = make(chan struct{})
		s := startScheduler(t, eng, SchedulerConfig{StepTokens: 512, MaxDecodeGap: gap, Clock: eng.clock})
		short, err := s.Submit(context.Background(), Request{Prompt: prompt(2, 0), MaxTokens: 200, IgnoreEOS: true})
		if err != nil {
			t.Fatal(err)
		}
		eng.gate <- struct{}{} // the short prompt
		long, err := s.Submit(context.Background(), Request{Prompt: prompt(1500, 1), MaxTokens: 3, IgnoreEOS: true})
		if err != nil {
			t.Fatal(err)
		}
		feed(t, eng.fakeEngine)
		got := collect(t, long)
		collect(t, short)
		eng.mu.Lock()
		defer eng.mu.Unlock()
		return got.tokens, slices.Clone(eng.batches)
	}
	free, _ := run(0)
	bounded, batches := run(40 * time.Millisecond)
	if !slices.Equal(free, bounded) {
		t.Errorf("the bounded run generated %v, the free one %v", bounded, free)
	}
	measured, chunks := false, 0
	for _, b := range batches {
		hasShort, prompt := false, 0
		for _, sq := range b.Seq {
			if sq == 0 {
				hasShort = true
			} else {
				prompt++
			}
		}
		if prompt > 0 && hasShort {
			if ms := 2 + b.Len(); measured && ms > 40 {
				t.Errorf("a step of %d tokens (%d ms) beside the stream, after the cost was measured", b.Len(), ms)
			}
			chunks++
		}
		measured = measured || b.Len() > stepCostSmall
	}
	if chunks < 30 {
		t.Errorf("the 1500-token prompt ran in %d steps beside the stream; at most 38 tokens a step needs over 30", chunks)
	}
}
