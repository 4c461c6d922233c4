package decode

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// startScheduler runs a scheduler over eng until the test ends.
func startScheduler(t *testing.T, eng Engine, cfg SchedulerConfig) *Scheduler {
	t.Helper()
	return startSchedulerVocab(t, eng, fakeVocab{}, cfg)
}

// startSchedulerVocab runs a scheduler over eng and vocab until the test
// ends; Run must return no error.
func startSchedulerVocab(t *testing.T, eng Engine, vocab Vocab, cfg SchedulerConfig) *Scheduler {
	t.Helper()
	s, err := NewScheduler(eng, vocab, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := s.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return s
}

// result is everything a request produced.
type result struct {
	tokens []int32
	text   string
	final  Event
}

// feed lets every Forward of a gated engine through until the test ends.
func feed(t *testing.T, eng *fakeEngine) {
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go func() {
		for {
			select {
			case eng.gate <- struct{}{}:
			case <-stop:
				return
			}
		}
	}()
}

func collect(t *testing.T, st *Stream) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var r result
	var sb strings.Builder
	for {
		ev, err := st.Next(ctx)
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		sb.WriteString(ev.Text)
		if ev.Done {
			r.final = ev
			r.text = sb.String()
			return r
		}
		r.tokens = append(r.tokens, ev.Token)
	}
}

func run(t *testing.T, s *Scheduler, r Request) result {
	t.Helper()
	st, err := s.Submit(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return collect(t, st)
}

func prompt(n int, salt int32) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = 1 + (int32(i)*7+salt)%31
	}
	return p
}

func seededRequest(i int) Request {
	return Request{
		Prompt:    prompt(3+i*5%40, int32(i)),
		MaxTokens: 10 + i%17,
		Sampling: SamplerParams{Temperature: 0.8, TopK: 20, TopP: 0.95, RepeatPenalty: 1.1,
			PenaltyLastN: 16, Seed: uint64(1000 + i), Logprobs: true, TopLogprobs: 2},
	}
}

// TestSchedulerBatchingInvariance runs 32 seeded requests one at a time and
// then all at once on engines of different widths and step sizes: every
// request must give the same tokens, text and logprobs.
func TestSchedulerBatchingInvariance(t *testing.T) {
	const n = 32
	alone := startScheduler(t, newFakeEngine(32, 128, 1), SchedulerConfig{MaxQueue: n})
	want := make([]result, n)
	for i := range want {
		want[i] = run(t, alone, seededRequest(i))
	}
	for _, shape := range []struct{ seqs, step int }{{8, 16}, {32, 512}, {5, 7}} {
		t.Run(fmt.Sprintf("seqs=%d step=%d", shape.seqs, shape.step), func(t *testing.T) {
			eng := newFakeEngine(32, 128, shape.seqs)
			s := startScheduler(t, eng, SchedulerConfig{MaxQueue: n, StepTokens: shape.step})
			got := make([]result, n)
			var wg sync.WaitGroup
			for i := range got {
				st, err := s.Submit(context.Background(), seededRequest(i))
				if err != nil {
					t.Fatal(err)
				}
				wg.Go(func() { got[i] = collect(t, st) })
			}
			wg.Wait()
			for i := range got {
				if fmt.Sprint(got[i].tokens) != fmt.Sprint(want[i].tokens) || got[i].text != want[i].text ||
					got[i].final.FinishReason != want[i].final.FinishReason {
					t.Errorf("request %d batched: %v %q %s\nalone: %v %q %s", i, got[i].tokens, got[i].text,
						got[i].final.FinishReason, want[i].tokens, want[i].text, want[i].final.FinishReason)
				}
			}
			maxRows := 0
			for _, b := range eng.batches {
				if b.Len() > max(shape.step, shape.seqs+1) {
					t.Errorf("batch of %d tokens over the step limit %d", b.Len(), shape.step)
				}
				rows := 0
				for _, l := range b.Logits {
					if l {
						rows++
					}
				}
				maxRows = max(maxRows, rows)
			}
			if shape.seqs > 1 && maxRows < 2 {
				t.Errorf("no step sampled more than one sequence: no batching happened")
			}
		})
	}
}

// TestSchedulerDecodeFlowsDuringPrefill checks that a long prompt is split
// into chunks and that a running sequence gets a token in every step.
func TestSchedulerDecodeFlowsDuringPrefill(t *testing.T) {
	eng := newFakeEngine(32, 256, 2)
	eng.gate = make(chan struct{})
	s := startScheduler(t, eng, SchedulerConfig{StepTokens: 8})
	short, err := s.Submit(context.Background(), Request{Prompt: prompt(2, 0), MaxTokens: 30, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	eng.gate <- struct{}{} // prefill of the short prompt
	long, err := s.Submit(context.Background(), Request{Prompt: prompt(60, 1), MaxTokens: 1})
	if err != nil {
		t.Fatal(err)
	}
	feed(t, eng)
	collect(t, long)
	collect(t, short)
	eng.mu.Lock()
	defer eng.mu.Unlock()
	prefillSteps := 0
	for _, b := range eng.batches[1:] {
		if b.Len() > 8 {
			t.Errorf("batch of %d tokens over the limit of 8", b.Len())
		}
		hasShort, hasLong := false, false
		for _, sq := range b.Seq {
			hasShort = hasShort || sq == 0
			hasLong = hasLong || sq == 1
		}
		if hasLong {
			prefillSteps++
			if !hasShort {
				t.Errorf("a prefill step without the running sequence's decode token: %v", b.Seq)
			}
		}
	}
	// 60 prompt tokens at 7 per step (one slot goes to the decode token).
	if prefillSteps != 9 {
		t.Errorf("long prompt took %d steps, want 9", prefillSteps)
	}
}

func TestSchedulerFinish(t *testing.T) {
	eng := newFakeEngine(32, 64, 2)
	s := startScheduler(t, eng, SchedulerConfig{})
	base := Request{Prompt: prompt(5, 3), MaxTokens: 40, Sampling: SamplerParams{Temperature: 1, Seed: 9}, IgnoreEOS: true}
	free := run(t, s, base)

	t.Run("max tokens", func(t *testing.T) {
		r := base
		r.MaxTokens = 7
		got := run(t, s, r)
		if got.final.FinishReason != "length" || len(got.tokens) != 7 || got.final.Usage.CompletionTokens != 7 {
			t.Errorf("finish %q after %d tokens (usage %+v), want length after 7", got.final.FinishReason, len(got.tokens), got.final.Usage)
		}
		if !strings.HasPrefix(free.text, got.text) {
			t.Errorf("text %q is not a prefix of the unlimited text %q", got.text, free.text)
		}
	})
	t.Run("context full", func(t *testing.T) {
		r := base
		r.MaxTokens = 0
		got := run(t, s, r)
		if got.final.FinishReason != "length" || got.final.Usage.PromptTokens+got.final.Usage.CompletionTokens != 64 {
			t.Errorf("finish %q with usage %+v, want length with 64 tokens in all", got.final.FinishReason, got.final.Usage)
		}
	})
	t.Run("eos", func(t *testing.T) {
		r := base
		r.IgnoreEOS = false
		r.Sampling.LogitBias = map[int32]float32{fakeEOS: 100}
		got := run(t, s, r)
		if got.final.FinishReason != "stop" || len(got.tokens) != 0 || got.text != "" || got.final.Usage.CompletionTokens != 1 {
			t.Errorf("finish %q, tokens %v, text %q, usage %+v: want stop with nothing emitted", got.final.FinishReason, got.tokens, got.text, got.final.Usage)
		}
	})
	t.Run("stop strings", func(t *testing.T) {
		for _, at := range []int{0, 3, 10, 25} {
			stop := free.text[at : at+3]
			r := base
			r.Stop = []string{stop, "never-there"}
			got := run(t, s, r)
			want := free.text[:strings.Index(free.text, stop)]
			if got.final.FinishReason != "stop" || got.text != want {
				t.Errorf("stop %q: finish %q text %q, want stop and %q", stop, got.final.FinishReason, got.text, want)
			}
		}
	})
}

func TestSchedulerRejectsPrompts(t *testing.T) {
	s := startScheduler(t, newFakeEngine(32, 16, 1), SchedulerConfig{})
	tests := []struct {
		name   string
		prompt []int32
	}{
		{"empty", nil},
		{"fills the context", prompt(16, 0)},
		{"token outside vocabulary", []int32{1, 32}},
		{"negative token", []int32{-1}},
	}
	for _, tt := range tests {
		_, err := s.Submit(context.Background(), Request{Prompt: tt.prompt})
		var pe *PromptError
		if !errors.As(err, &pe) {
			t.Errorf("%s: error %v, want a PromptError", tt.name, err)
		}
	}
	if _, err := s.Submit(context.Background(), Request{Prompt: prompt(3, 0), Sampling: SamplerParams{TopLogprobs: 99}}); !errors.Is(err, ErrInvalidSampling) {
		t.Errorf("bad sampler parameters: %v, want ErrInvalidSampling", err)
	}
}

func TestSchedulerQueueFull(t *testing.T) {
	eng := newFakeEngine(32, 64, 1)
	eng.gate = make(chan struct{})
	s := startScheduler(t, eng, SchedulerConfig{MaxQueue: 1})
	req := Request{Prompt: prompt(3, 0), MaxTokens: 2, IgnoreEOS: true}
	var streams []*Stream
	for range 2 {
		st, err := s.Submit(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		streams = append(streams, st)
	}
	if _, err := s.Submit(context.Background(), req); !errors.Is(err, ErrQueueFull) {
		t.Errorf("third request: %v, want ErrQueueFull", err)
	}
	close(eng.gate)
	for _, st := range streams {
		collect(t, st)
	}
	if _, err := s.Submit(context.Background(), req); err != nil {
		t.Errorf("after the queue drained: %v", err)
	}
}

// TestSchedulerCancelFreesSlot cancels a running request on a one-slot
// engine: the slot must be free within a step for the next request.
func TestSchedulerCancelFreesSlot(t *testing.T) {
	eng := newFakeEngine(32, 4096, 1)
	eng.gate = make(chan struct{})
	s := startScheduler(t, eng, SchedulerConfig{MaxQueue: 4})
	ctx, cancel := context.WithCancel(context.Background())
	long, err := s.Submit(ctx, Request{Prompt: prompt(3, 0), IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	next, err := s.Submit(context.Background(), Request{Prompt: prompt(3, 1), MaxTokens: 2, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	eng.gate <- struct{}{}
	eng.gate <- struct{}{}
	cancel()
	eng.mu.Lock()
	k0 := len(eng.batches)
	eng.mu.Unlock()
	feed(t, eng)
	got := collect(t, next)
	if got.final.FinishReason != "length" {
		t.Errorf("next request ended with %+v", got.final)
	}
	cancelled := collect(t, long)
	if !errors.Is(cancelled.final.Err, context.Canceled) {
		t.Errorf("cancelled request ended with %+v, want context.Canceled", cancelled.final)
	}
	// At most the step already in flight may still carry the cancelled
	// request before the next one's prefill (position 0) starts.
	eng.mu.Lock()
	late := 0
	for _, b := range eng.batches[k0:] {
		if b.Pos[0] == 0 {
			break
		}
		late++
	}
	eng.mu.Unlock()
	if late > 1 {
		t.Errorf("cancelled request ran %d more steps, want at most 1", late)
	}
	if n := s.Metrics().Snapshot().Finished["cancelled"]; n != 1 {
		t.Errorf("%d cancelled requests counted, want 1", n)
	}
}

func TestSchedulerForwardError(t *testing.T) {
	eng := newFakeEngine(32, 64, 2)
	eng.fail = errors.New("device lost")
	s := startScheduler(t, eng, SchedulerConfig{})
	got := run(t, s, Request{Prompt: prompt(3, 0), MaxTokens: 3})
	if got.final.Err == nil || !strings.Contains(got.final.Err.Error(), "device lost") {
		t.Errorf("final event %+v, want the engine's error", got.final)
	}
	if again := run(t, s, Request{Prompt: prompt(3, 0), MaxTokens: 3, IgnoreEOS: true}); again.final.Err != nil {
		t.Errorf("request after the failure: %v", again.final.Err)
	}
}

func TestSchedulerShutdown(t *testing.T) {
	eng := newFakeEngine(32, 4096, 1)
	eng.gate = make(chan struct{})
	s, err := NewScheduler(eng, fakeVocab{}, SchedulerConfig{MaxQueue: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	running, _ := s.Submit(context.Background(), Request{Prompt: prompt(3, 0), IgnoreEOS: true})
	queued, _ := s.Submit(context.Background(), Request{Prompt: prompt(3, 0), IgnoreEOS: true})
	if n := s.Pending(); n != 2 {
		t.Errorf("%d requests pending, want 2 (one running, one queued)", n)
	}
	eng.gate <- struct{}{}
	s.Shutdown()
	if _, err := s.Submit(context.Background(), Request{Prompt: prompt(3, 0)}); !errors.Is(err, ErrShuttingDown) {
		t.Errorf("submit after Shutdown: %v, want ErrShuttingDown", err)
	}
	cancel()
	close(eng.gate)
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	for name, st := range map[string]*Stream{"running": running, "queued": queued} {
		if got := collect(t, st); !errors.Is(got.final.Err, ErrShuttingDown) {
			t.Errorf("%s request ended with %+v, want ErrShuttingDown", name, got.final)
		}
	}
	if !s.Idle() || s.Pending() != 0 {
		t.Errorf("scheduler not idle after Run returned: %d pending", s.Pending())
	}
}

// TestMetricsSnapshot checks the counters of one request in the snapshot
// that /metrics renders.
func TestMetricsSnapshot(t *testing.T) {
	s := startScheduler(t, newFakeEngine(32, 64, 2), SchedulerConfig{})
	run(t, s, Request{Prompt: prompt(4, 0), MaxTokens: 5, IgnoreEOS: true})
	m := s.Metrics().Snapshot()
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"finished by length", m.Finished["length"], 1},
		{"prompt tokens", m.PromptTokens, 4},
		{"generated tokens", m.GeneratedTokens, 5},
		{"slots", uint64(m.Slots), 2},
		{"first-token observations", m.TTFT.Count, 1},
		{"inter-token observations", m.ITL.Count, 4},
		{"inter-token observations by bucket", sum(m.ITL.Counts), 4},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.name, c.got, c.want)
		}
	}
	if m.Graphs != nil {
		t.Errorf("graph counters %+v from an engine without graphs", m.Graphs)
	}
}

func sum(xs []uint64) uint64 {
	var n uint64
	for _, x := range xs {
		n += x
	}
	return n
}

// graphEngine is a fake engine that also reports CUDA graph counters.
type graphEngine struct {
	Engine
	stats GraphStats
}

func (g graphEngine) GraphStats() GraphStats { return g.stats }

func TestMetricsShowGraphStats(t *testing.T) {
	m := NewMetrics()
	want := GraphStats{GraphCounts: GraphCounts{Captures: 7, Replays: 1234, Fallbacks: 1, EagerSteps: 5},
		Buckets: []BucketStats{{Size: 1, Nodes: 40, Replays: 1000, RealTokens: 1000}, {Size: 8, Replays: 234, RealTokens: 1500, PaddedTokens: 372}}}
	m.WatchGraphs(graphEngine{stats: want})
	got := m.Snapshot().Graphs
	if got == nil || !reflect.DeepEqual(*got, want) {
		t.Errorf("snapshot graph stats %+v, want %+v", got, want)
	}
}
