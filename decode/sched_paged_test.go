package decode

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"llmserve/gguf"
	"llmserve/internal/shared"
	"llmserve/model/tokenizer"
)

// pagedScheduler starts a scheduler over a stories260K CPU engine with
// the given options.
func pagedScheduler(t *testing.T, opts CPUOptions, cfg SchedulerConfig) *Scheduler {
	t.Helper()
	eng := openEngine(t, "models/stories260K.gguf", opts)
	return startStoriesScheduler(t, eng, cfg)
}

// scored is a request's tokens and their log-probabilities, which show
// any difference in the logits.
type scored struct {
	tokens   []int32
	logprobs []float32
	final    Event
}

func collectScored(t *testing.T, st *Stream) scored {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var r scored
	for {
		ev, err := st.Next(ctx)
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		if ev.Done {
			r.final = ev
			return r
		}
		r.tokens = append(r.tokens, ev.Token)
		r.logprobs = append(r.logprobs, ev.Logprob)
	}
}

// runAll submits every request at once and collects them.
func runAll(t *testing.T, s *Scheduler, reqs []Request) []scored {
	t.Helper()
	out := make([]scored, len(reqs))
	var wg sync.WaitGroup
	for i, r := range reqs {
		st, err := s.Submit(context.Background(), r)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		wg.Go(func() { out[i] = collectScored(t, st) })
	}
	wg.Wait()
	return out
}

func runOne(t *testing.T, s *Scheduler, r Request) scored {
	t.Helper()
	return runAll(t, s, []Request{r})[0]
}

func sameScored(a, b scored) bool {
	return a.final.Err == nil && b.final.Err == nil && slices.Equal(a.tokens, b.tokens) && slices.Equal(a.logprobs, b.logprobs)
}

// TestSchedulerPoolExhaustion runs 24 greedy requests in 8 slots over a
// pool that holds one context (128 tokens): they queue and are preempted
// and recomputed, none fails, and each gives the tokens and log-probs it
// gives over a pool with room for every slot.
func TestSchedulerPoolExhaustion(t *testing.T) {
	const ctx, bs = 128, 16
	reqs := make([]Request, 24)
	for i := range reqs {
		reqs[i] = Request{Prompt: storiesTokens(1 + i*5%40), MaxTokens: 30 + i*7%40, IgnoreEOS: true,
			Sampling: SamplerParams{Logprobs: true}}
		if i%3 == 0 { // some share a prefix
			reqs[i].Prompt = storiesTokens(35)
		}
	}
	opts := CPUOptions{Context: ctx, MaxSeqs: 8, Threads: 2, BlockSize: bs}
	big := pagedScheduler(t, opts, SchedulerConfig{MaxQueue: 64, StepTokens: 64})
	want := runAll(t, big, reqs)

	probe := openEngine(t, "models/stories260K.gguf", opts)
	opts.KVMemory = probe.KVLayout().BytesPerToken() * ctx // one context
	small := pagedScheduler(t, opts, SchedulerConfig{MaxQueue: 64, StepTokens: 64})
	got := runAll(t, small, reqs)
	for i := range got {
		if !sameScored(got[i], want[i]) {
			t.Errorf("request %d over the small pool: %v (%v), over the big one: %v", i, got[i].tokens, got[i].final.Err, want[i].tokens)
		}
	}
	m := small.Metrics().Snapshot()
	t.Logf("small pool: %d preemptions, %d prompt tokens from the cache; big pool: %d preemptions",
		m.Preemptions, m.CachedPrompt, big.Metrics().Snapshot().Preemptions)
	if m.Finished["length"] != uint64(len(reqs)) || m.KVBlocksUsed != 0 {
		t.Errorf("finished %v with %d blocks still in use", m.Finished, m.KVBlocksUsed)
	}
	if m.Preemptions == 0 {
		t.Errorf("no preemption over a pool of one context for 8 slots")
	}
}

// reuseCase is a request and how many of its prompt tokens a scheduler
// with a prefix cache takes from it.
type reuseCase struct {
	name   string
	r      Request
	cached uint64
}

// checkReuse runs each case, in order, on s (with a prefix cache) and on
// cold (without): s must take the case's cached prompt tokens from its
// cache and give the tokens and log-probs cold gives.
func checkReuse(t *testing.T, s, cold *Scheduler, cases []reuseCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			before := s.Metrics().Snapshot().CachedPrompt
			got := runOne(t, s, tt.r)
			if d := s.Metrics().Snapshot().CachedPrompt - before; d != tt.cached {
				t.Errorf("%d prompt tokens from the cache, want %d", d, tt.cached)
			}
			if want := runOne(t, cold, tt.r); !sameScored(got, want) {
				t.Errorf("with reuse %v, cold %v", got.tokens, want.tokens)
			}
		})
	}
}

// TestSchedulerPrefixCache checks reuse across requests on stories260K: a
// repeated prompt, and a second chat turn (the first turn's prompt and
// reply and more), take their full blocks from the cache, all but the
// block with the last position, and give the tokens and log-probs of a
// cold run; cache_prompt false (NoPromptCache) takes nothing.
func TestSchedulerPrefixCache(t *testing.T) {
	const bs = 16
	opts := CPUOptions{Context: 128, MaxSeqs: 2, Threads: 2, BlockSize: bs}
	s := pagedScheduler(t, opts, SchedulerConfig{MaxQueue: 8})
	cold := pagedScheduler(t, opts, SchedulerConfig{MaxQueue: 8, NoPrefixCache: true})
	first := Request{Prompt: storiesTokens(50), MaxTokens: 20, IgnoreEOS: true, Sampling: SamplerParams{Logprobs: true}}
	turn1 := runOne(t, s, first)
	second := first
	second.Prompt = append(append(slices.Clone(first.Prompt), turn1.tokens...), storiesTokens(6)[1:]...)
	seeded := first
	seeded.Sampling = SamplerParams{Temperature: 0.9, TopK: 40, Seed: 5, Logprobs: true}
	noCache := first
	noCache.NoPromptCache = true
	checkReuse(t, s, cold, []reuseCase{
		{"same prompt", first, (50 - 1) / bs * bs},
		{"same prompt, seeded", seeded, (50 - 1) / bs * bs},
		{"second turn", second, uint64((len(second.Prompt) - 1) / bs * bs)},
		{"cache_prompt false", noCache, 0},
	})
	if c := cold.Metrics().Snapshot().CachedPrompt; c != 0 {
		t.Errorf("%d prompt tokens from the cache with NoPrefixCache", c)
	}
}

// TestSchedulerPrefixEviction fills a small pool with distinct prompts
// so that cached blocks are evicted, then repeats them: every answer
// stays that of a cold run.
func TestSchedulerPrefixEviction(t *testing.T) {
	const ctx, bs = 64, 16
	opts := CPUOptions{Context: ctx, MaxSeqs: 2, Threads: 2, BlockSize: bs}
	probe := openEngine(t, "models/stories260K.gguf", opts)
	opts.KVMemory = probe.KVLayout().BytesPerToken() * 2 * ctx
	s := pagedScheduler(t, opts, SchedulerConfig{MaxQueue: 8})
	cold := pagedScheduler(t, opts, SchedulerConfig{MaxQueue: 8, NoPrefixCache: true})
	var reqs []Request
	for i := range 6 {
		p := storiesTokens(40)
		p[1] = int32(300 + i) // distinct from the first block on
		reqs = append(reqs, Request{Prompt: p, MaxTokens: 8, IgnoreEOS: true, Sampling: SamplerParams{Logprobs: true}})
	}
	for round := range 2 {
		for i, r := range reqs {
			t.Run(fmt.Sprintf("round %d request %d", round, i), func(t *testing.T) {
				if got, want := runOne(t, s, r), runOne(t, cold, r); !sameScored(got, want) {
					t.Errorf("with the cache %v, cold %v", got.tokens, want.tokens)
				}
			})
		}
	}
	if ev := s.Metrics().Snapshot().KVEvictions; ev == 0 {
		t.Errorf("no eviction in a pool of %d tokens after %d prompts of 40", 2*ctx, len(reqs))
	}
	if m := s.Metrics().Snapshot(); !m.KVPaged || m.KVLayout.Blocks != 8 || m.KVLayout.BytesPerToken() <= 0 || m.KVContext != ctx {
		t.Errorf("metrics describe the pool as paged %v, %d blocks, %d bytes a token, context %d; want a paged pool of 8 blocks, context %d",
			m.KVPaged, m.KVLayout.Blocks, m.KVLayout.BytesPerToken(), m.KVContext, ctx)
	}
}

// TestSchedulerPoolChurn mixes choices that share blocks, seeded and
// greedy requests and requests cancelled midway over a pool of one
// context for 8 slots: every request not cancelled gives what it gives
// over a big pool, none fails, and no block stays in use.
func TestSchedulerPoolChurn(t *testing.T) {
	const ctx, bs = 128, 16
	opts := CPUOptions{Context: ctx, MaxSeqs: 8, Threads: 2, BlockSize: bs}
	probe := openEngine(t, "models/stories260K.gguf", opts)
	big := pagedScheduler(t, opts, SchedulerConfig{MaxQueue: 64, StepTokens: 48})
	opts.KVMemory = probe.KVLayout().BytesPerToken() * ctx
	small := pagedScheduler(t, opts, SchedulerConfig{MaxQueue: 64, StepTokens: 48})

	type job struct {
		r      Request
		n      int  // choices
		cancel bool // cancelled after its third token
	}
	var jobs []job
	for i := range 12 {
		r := Request{Prompt: storiesTokens(20 + i*9%50), MaxTokens: 25 + i*5%30, IgnoreEOS: true,
			Sampling: SamplerParams{Logprobs: true}}
		if i%2 == 1 {
			r.Sampling = SamplerParams{Temperature: 0.8, TopK: 40, Seed: uint64(i), Logprobs: true}
		}
		jobs = append(jobs, job{r: r, n: 1 + 2*(i%4/3), cancel: i%5 == 2})
	}
	runJobs := func(s *Scheduler, cancels bool) [][]scored {
		out := make([][]scored, len(jobs))
		var wg sync.WaitGroup
		for i, j := range jobs {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			streams, err := s.SubmitChoices(ctx, j.r, j.n)
			if err != nil {
				t.Fatalf("job %d: %v", i, err)
			}
			out[i] = make([]scored, j.n)
			for c, st := range streams {
				wg.Go(func() {
					if cancels && j.cancel {
						for range 3 {
							ev, err := st.Next(context.Background())
							if err != nil {
								t.Errorf("job %d choice %d: stream: %v", i, c, err)
								return
							}
							if ev.Done {
								out[i][c].final = ev
								return
							}
						}
						cancel()
					}
					out[i][c] = collectScored(t, st)
				})
			}
		}
		wg.Wait()
		return out
	}
	want := runJobs(big, false)
	got := runJobs(small, true)
	for i, j := range jobs {
		for c := range j.n {
			g := got[i][c]
			if j.cancel {
				if g.final.Err != nil && g.final.Err != context.Canceled {
					t.Errorf("job %d choice %d: %v", i, c, g.final.Err)
				}
				continue
			}
			if !sameScored(g, want[i][c]) {
				t.Errorf("job %d choice %d over the small pool: %v (%v), over the big one: %v", i, c, g.tokens, g.final.Err, want[i][c].tokens)
			}
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for small.Pending() > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	m := small.Metrics().Snapshot()
	t.Logf("small pool: %d preemptions, %d prompt tokens from the cache, %d shared between choices", m.Preemptions, m.CachedPrompt, m.SharedPrompt)
	if m.KVBlocksUsed != 0 || small.Pending() != 0 {
		t.Errorf("%d blocks in use and %d requests pending after every request ended", m.KVBlocksUsed, small.Pending())
	}
	if m.Finished["error"] != 0 || m.Finished["cancelled"] == 0 {
		t.Errorf("requests ended %v: want none with an error, some cancelled", m.Finished)
	}
}

// panicPaged is a CPU engine, paged, whose Forward panics on step
// panicAt (counting from 1) and, with failAt, fails on that step.
type panicPaged struct {
	*CPUEngine
	steps           atomic.Int32
	panicAt, failAt int32
}

func (e *panicPaged) Forward(b *Batch, out []float32) error {
	switch e.steps.Add(1) {
	case e.panicAt:
		panic("engine step failed")
	case e.failAt:
		return errors.New("engine step failed")
	}
	return e.CPUEngine.Forward(b, out)
}

// TestSchedulerPagedStepFailures makes a step panic and a later one fail
// while 16 requests run over a pool of one context: the requests of
// those steps end with an error, every other request gives what it gives
// without failures, and no block stays in use.
func TestSchedulerPagedStepFailures(t *testing.T) {
	const ctx, bs = 128, 16
	opts := CPUOptions{Context: ctx, MaxSeqs: 6, Threads: 2, BlockSize: bs}
	probe := openEngine(t, "models/stories260K.gguf", opts)
	opts.KVMemory = probe.KVLayout().BytesPerToken() * ctx
	reqs := make([]Request, 16)
	for i := range reqs {
		reqs[i] = Request{Prompt: storiesTokens(10 + i*7%45), MaxTokens: 30 + i%20, IgnoreEOS: true, Sampling: SamplerParams{Logprobs: true}}
	}
	want := runAll(t, pagedScheduler(t, opts, SchedulerConfig{MaxQueue: 32, StepTokens: 32}), reqs)

	eng := &panicPaged{CPUEngine: openEngine(t, "models/stories260K.gguf", opts), panicAt: 20, failAt: 45}
	f, err := gguf.Open(shared.Path(t, "models/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	s := startSchedulerVocab(t, eng, tokVocab{tok}, SchedulerConfig{MaxQueue: 32, StepTokens: 32})
	got := runAll(t, s, reqs)
	failed := 0
	for i := range got {
		if got[i].final.Err != nil {
			failed++
			continue
		}
		if !sameScored(got[i], want[i]) {
			t.Errorf("request %d: %v, without failures %v", i, got[i].tokens, want[i].tokens)
		}
	}
	m := s.Metrics().Snapshot()
	t.Logf("%d of %d requests ended by the failed steps; %d preemptions", failed, len(reqs), m.Preemptions)
	if failed == 0 || failed == len(reqs) || m.KVBlocksUsed != 0 || s.Pending() != 0 {
		t.Errorf("%d requests failed, %d blocks in use, %d pending", failed, m.KVBlocksUsed, s.Pending())
	}
	if n := m.Finished["error"] + m.Finished["length"]; n != uint64(len(reqs)) {
		t.Errorf("finished %v, want %d in all", m.Finished, len(reqs))
	}
}

// TestSchedulerMetricsBeforeEnd reads the metrics the moment each
// request's final event is taken: its blocks are already free and it is
// already counted as finished.
func TestSchedulerMetricsBeforeEnd(t *testing.T) {
	opts := CPUOptions{Context: 128, MaxSeqs: 2, Threads: 1, BlockSize: 16}
	s := pagedScheduler(t, opts, SchedulerConfig{MaxQueue: 4, StepTokens: 64})
	for i := range 40 {
		st, err := s.Submit(context.Background(), Request{Prompt: storiesTokens(20 + i), MaxTokens: 2, IgnoreEOS: true})
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		deadline := time.Now().Add(30 * time.Second)
		var evs []Event
		done := false
		for !done && time.Now().Before(deadline) {
			evs, done = st.Drain(evs[:0]) // no wait: the loop may still be running
		}
		if !done {
			t.Fatalf("request %d did not end", i)
		}
		m := s.Metrics().Snapshot()
		if m.KVBlocksUsed != 0 || m.Finished["length"] != uint64(i+1) {
			t.Fatalf("request %d: once its end was read, %d blocks in use and finished %v", i, m.KVBlocksUsed, m.Finished)
		}
	}
}
