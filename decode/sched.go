package decode

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"
)

// Vocab is what the scheduler needs from a tokenizer.
type Vocab interface {
	// IsEOG reports whether a token ends generation (EOS, EOT...).
	IsEOG(id int32) bool
	// NewTextDecoder returns a decoder that turns one sequence's tokens
	// into text, releasing only complete UTF-8.
	NewTextDecoder() TextDecoder
}

// TextDecoder turns a stream of tokens into text.
type TextDecoder interface {
	Add(id int32) string // text completed by this token
	Flush() string       // whatever is left at the end
}

// Request is one generation job.
type Request struct {
	Prompt    []int32       // at least one token, fewer than the context size
	MaxTokens int           // most tokens to generate; <= 0: until the context is full
	Sampling  SamplerParams // how to pick each token
	Stop      []string      // generation ends before the first of these strings
	IgnoreEOS bool          // keep generating past end-of-generation tokens
	// NoPromptCache takes nothing from the prefix cache of a paged KV
	// pool (cache_prompt: false): the whole prompt is computed. Its full
	// blocks still enter the cache for later requests.
	NoPromptCache bool
}

// Errors Submit returns; callers map them to their protocol.
var (
	ErrQueueFull    = errors.New("decode: request queue is full")
	ErrShuttingDown = errors.New("decode: scheduler is shutting down")
	// ErrInvalidSampling wraps a rejection of a request's SamplerParams.
	ErrInvalidSampling = errors.New("invalid sampling parameters")
	// ErrInternal wraps a failure inside the server while doing one
	// request's work (a recovered panic): the request ends with it, and
	// every other request goes on.
	ErrInternal = errors.New("decode: internal error")
)

// PromptError says that a prompt cannot be run.
type PromptError struct {
	Tokens  int // prompt length
	Context int // positions per sequence
	Msg     string
}

func (e *PromptError) Error() string { return "decode: " + e.Msg }

// SchedulerConfig sizes a Scheduler.
type SchedulerConfig struct {
	MaxQueue   int      // requests that may wait for a slot; more are refused with ErrQueueFull
	StepTokens int      // most tokens in one forward step (decode tokens plus prefill chunks); default 512
	Metrics    *Metrics // counters to update; nil: a new set
	// NoPrefixCache makes every request compute its whole prompt, as
	// NoPromptCache does for one.
	NoPrefixCache bool
	// OnPanic, when set, is told of every panic the scheduler recovers
	// from: where it happened, the value and the panicking goroutine's
	// stack. It is called from the goroutine that panicked.
	OnPanic func(where string, v any, stack []byte)
	// MaxDecodeGap, when positive, bounds the inter-token gap of running
	// streams while prompts are processed: a step that carries decode
	// tokens takes only as many prompt tokens as the measured cost of
	// earlier steps says fit in it (at least 16). 0: prompt chunks fill
	// the step (StepTokens).
	MaxDecodeGap time.Duration
	// Clock times the steps for MaxDecodeGap; nil is time.Now.
	Clock func() time.Time
}

// Scheduler runs continuous batching: each step packs one decode token of
// every generating sequence plus prefill chunks of new ones into a single
// Batch, runs the engine once, and samples every sequence whose logits came
// back. New requests join between steps.
type Scheduler struct {
	eng     Engine
	vocab   Vocab
	cfg     SchedulerConfig
	metrics *Metrics
	wake    chan struct{} // capacity 1: a request arrived or shutdown began

	mu       sync.Mutex  // guards queue, inflight, closing
	queue    []*sequence // submitted, waiting for a slot, in arrival order
	inflight int         // queued plus running requests
	closing  bool        // Submit refuses new requests

	// Owned by the Run goroutine.
	slots  []*sequence // [MaxSeqs] running sequence of each slot, nil when free
	active []*sequence // running sequences in admission order
	batch  Batch       // [<= StepTokens] this step's tokens
	cost   stepCost    // measured step durations, for MaxDecodeGap
	rows   []*sequence // [MaxSeqs] sequence of each logits row of this step
	logits []float32   // [MaxSeqs * VocabSize] logits rows of this step

	// With an engine that picks tokens itself (Picker): each row's pick
	// (nil: picked on the host) and the tokens the engine picked.
	picker  Picker
	pickBuf []Pick  // [MaxSeqs]
	picks   []*Pick // [MaxSeqs]
	toks    []int32 // [MaxSeqs]; -1 where the host picks

	view *slotView // the slots as Slots reports them, published by Run

	paged *pagedState // the block pool of a PagedEngine; nil: fixed slots
}

// NewScheduler prepares a scheduler over eng; call Run to start it.
func NewScheduler(eng Engine, vocab Vocab, cfg SchedulerConfig) (*Scheduler, error) {
	if eng.MaxSeqs() <= 0 || eng.VocabSize() <= 0 || eng.ContextSize() <= 1 {
		return nil, fmt.Errorf("decode: engine with %d slots, vocabulary %d, context %d", eng.MaxSeqs(), eng.VocabSize(), eng.ContextSize())
	}
	if cfg.StepTokens <= 0 {
		cfg.StepTokens = 512
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	cfg.StepTokens = max(cfg.StepTokens, eng.MaxSeqs()+1)
	if cfg.MaxQueue < 0 {
		cfg.MaxQueue = 0
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics()
	}
	if g, ok := eng.(GraphStatser); ok {
		cfg.Metrics.WatchGraphs(g)
	}
	n := eng.MaxSeqs()
	s := &Scheduler{
		eng:     eng,
		vocab:   vocab,
		cfg:     cfg,
		metrics: cfg.Metrics,
		wake:    make(chan struct{}, 1),
		view:    newSlotView(n),
		slots:   make([]*sequence, n),
		active:  make([]*sequence, 0, n),
		rows:    make([]*sequence, 0, n),
		logits:  make([]float32, n*eng.VocabSize()),
		batch: Batch{
			Tokens: make([]int32, 0, cfg.StepTokens),
			Pos:    make([]int32, 0, cfg.StepTokens),
			Seq:    make([]int32, 0, cfg.StepTokens),
			Logits: make([]bool, 0, cfg.StepTokens),
		},
	}
	if pe, ok := eng.(PagedEngine); ok {
		var err error
		if s.paged, err = newPagedState(pe, n, cfg.NoPrefixCache); err != nil {
			return nil, err
		}
		s.batch.Blocks = s.paged.tables
		s.metrics.setKVLayout(s.paged.layout, eng.ContextSize())
	}
	if p, ok := eng.(Picker); ok {
		s.picker = p
		s.pickBuf, s.picks, s.toks = make([]Pick, n), make([]*Pick, 0, n), make([]int32, n)
	}
	s.metrics.setOccupancy(0, 0, n)
	return s, nil
}

// Metrics returns the scheduler's counters.
func (s *Scheduler) Metrics() *Metrics { return s.metrics }

// ContextSize is the number of positions one request may use (prompt plus
// generated tokens).
func (s *Scheduler) ContextSize() int { return s.eng.ContextSize() }

// Submit queues a request. Its events arrive on the returned Stream; when
// ctx ends, the request is dropped and its slot freed within one step.
func (s *Scheduler) Submit(ctx context.Context, r Request) (*Stream, error) {
	if err := s.check(r); err != nil {
		s.metrics.reject("invalid")
		return nil, err
	}
	seq, err := s.newSequence(ctx, r)
	if err != nil {
		s.metrics.reject(rejectReason(err))
		return nil, err
	}
	if err := s.enqueueAll([]*sequence{seq}); err != nil {
		return nil, err
	}
	return seq.stream, nil
}

// newSequence builds everything a request needs that is proportional to
// it (sampler, stop matcher, text decoder, the penalties' view of the
// prompt) in the caller's goroutine, so that the scheduling loop never
// spends a request's setup time. A panic while doing so is this request's
// failure: it returns an error wrapping ErrInternal.
func (s *Scheduler) newSequence(ctx context.Context, r Request) (seq *sequence, err error) {
	defer func() {
		if v := recover(); v != nil {
			s.panicked("request setup", v, debug.Stack())
			seq, err = nil, fmt.Errorf("%w: request setup panicked: %v", ErrInternal, v)
		}
	}()
	p := r.Sampling
	ctxSize := s.eng.ContextSize()
	if p.PenaltyLastN > ctxSize {
		p.PenaltyLastN = ctxSize
	}
	if p.DRYPenaltyLastN <= 0 || p.DRYPenaltyLastN > ctxSize {
		p.DRYPenaltyLastN = ctxSize
	}
	text, _ := s.vocab.(TokenText)
	sampler, err := NewSamplerText(p, s.eng.VocabSize(), text)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSampling, err)
	}
	for _, t := range r.Prompt {
		sampler.Accept(t)
	}
	// Room for the tokens the request may generate (growing past 1024
	// generated tokens when it has no max_tokens).
	room := min(ctxSize, len(r.Prompt)+1024)
	if r.MaxTokens > 0 {
		room = min(ctxSize, len(r.Prompt)+r.MaxTokens)
	}
	return &sequence{
		req:       r,
		tokens:    append(make([]int32, 0, room), r.Prompt...),
		fillTo:    len(r.Prompt),
		ctx:       ctx,
		stream:    newStream(),
		sampler:   sampler,
		dec:       s.vocab.NewTextDecoder(),
		stop:      NewStopMatcher(r.Stop),
		submitted: time.Now(),
	}, nil
}

// rejectReason labels a failure to build a request for the metrics.
func rejectReason(err error) string {
	if errors.Is(err, ErrInternal) {
		return "internal"
	}
	return "invalid"
}

// Capacity is the most requests that can be queued or running at once
// (slots plus queue); a request needing more can never be served.
func (s *Scheduler) Capacity() int { return len(s.slots) + s.cfg.MaxQueue }

// check validates a request's prompt against the engine.
func (s *Scheduler) check(r Request) error {
	n, ctxSize := len(r.Prompt), s.eng.ContextSize()
	if n == 0 {
		return &PromptError{Tokens: 0, Context: ctxSize, Msg: "the prompt is empty"}
	}
	if n >= ctxSize {
		return &PromptError{Tokens: n, Context: ctxSize, Msg: fmt.Sprintf(
			"the prompt has %d tokens but the context holds %d, including at least one generated token", n, ctxSize)}
	}
	vocab := int32(s.eng.VocabSize())
	for i, t := range r.Prompt {
		if t < 0 || t >= vocab {
			return &PromptError{Tokens: n, Context: ctxSize, Msg: fmt.Sprintf(
				"prompt token %d at index %d is outside the vocabulary of %d", t, i, vocab)}
		}
	}
	return nil
}

// Shutdown makes Submit refuse new requests; running and queued ones go on
// until Run's context ends.
func (s *Scheduler) Shutdown() {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.signal()
}

// Pending reports how many requests are queued or running.
func (s *Scheduler) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inflight
}

// Idle reports whether no request is queued or running.
func (s *Scheduler) Idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inflight == 0
}

func (s *Scheduler) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}
