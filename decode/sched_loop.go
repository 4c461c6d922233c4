package decode

// The scheduler's run loop: admission, one forward step over every
// active sequence, sampling and emitting, and the guards that keep one
// request's failure from ending the loop.

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"time"
)

// Run is the scheduling loop. It returns when ctx ends, after ending every
// queued and running request with ErrShuttingDown.
func (s *Scheduler) Run(ctx context.Context) error {
	for {
		if ctx.Err() != nil {
			s.abortAll(ErrShuttingDown)
			s.publishSlots()
			return nil
		}
		s.iterate(ctx)
	}
}

// iterate is one turn of the loop. A panic that escapes the guards of the
// requests' own work ends the running requests with an error wrapping
// ErrInternal, and the loop goes on.
func (s *Scheduler) iterate(ctx context.Context) {
	defer s.publishSlots() // runs last, after a recovery
	defer func() {
		if v := recover(); v != nil {
			s.panicked("scheduler loop", v, debug.Stack())
			err := fmt.Errorf("%w: scheduler loop panicked: %v", ErrInternal, v)
			for _, seq := range s.active {
				if !seq.done && !seq.requeued { // a preempted sequence waits in the queue
					s.release(seq, Event{Err: err}, "error")
				}
			}
			s.resetChunks()
			s.compact()
		}
	}()
	// Let goroutines made runnable by the last step (stream readers)
	// or by new requests (submitters) run before the next step takes
	// every thread: arrivals join sooner and readers keep up.
	runtime.Gosched()
	s.dropCancelled()
	s.admit()
	if len(s.active) == 0 {
		s.publishSlots()
		select {
		case <-ctx.Done():
		case <-s.wake:
		}
		return
	}
	s.step()
}

// panicked counts a recovered panic and reports it to OnPanic (whose own
// panic is dropped).
func (s *Scheduler) panicked(where string, v any, stack []byte) {
	s.metrics.panicked()
	if s.cfg.OnPanic == nil {
		return
	}
	defer func() { _ = recover() }()
	s.cfg.OnPanic(where, v, stack)
}

// admit moves queued requests into free slots, dropping cancelled ones.
func (s *Scheduler) admit() {
	s.mu.Lock()
	defer s.mu.Unlock()
	kept := s.queue[:0]
	reserved, blocked := 0, false
	for _, seq := range s.queue {
		if err := seq.ctx.Err(); err != nil {
			s.inflight--
			s.end(seq, Event{Err: err}, "cancelled")
			continue
		}
		slot := s.freeSlot()
		// With a paged pool, requests are admitted in order while the
		// pool has room for their prompts.
		if slot < 0 || blocked || (s.paged != nil && !s.admitPaged(seq, &reserved)) {
			blocked = blocked || slot >= 0
			kept = append(kept, seq)
			continue
		}
		if !seq.requeued {
			s.metrics.admitted(len(seq.req.Prompt))
		}
		seq.start(int32(slot))
		s.slots[slot] = seq
		if s.paged != nil {
			s.paged.tables[slot] = seq.table
		}
		s.active = append(s.active, seq)
	}
	clear(s.queue[len(kept):])
	s.queue = kept
	s.metrics.setOccupancy(len(s.queue), len(s.active), len(s.slots))
}

func (s *Scheduler) freeSlot() int {
	for i, q := range s.slots {
		if q == nil {
			return i
		}
	}
	return -1
}

// dropCancelled ends running sequences whose context has ended.
func (s *Scheduler) dropCancelled() {
	for _, seq := range s.active {
		if err := seq.ctx.Err(); err != nil {
			s.release(seq, Event{Err: err}, "cancelled")
		}
	}
	s.compact()
}

// step runs one forward pass over every active sequence and samples.
func (s *Scheduler) step() {
	s.sharePrefills()
	s.batch.Reset()
	s.rows = s.rows[:0]
	// Decode tokens first: running streams keep flowing while prompts fill.
	// With a paged pool, each sequence first gets the cells it writes
	// (cells), older sequences first.
	for _, seq := range s.active {
		if seq.prefilled() && !seq.requeued && s.cells(seq, 1, true) == 1 {
			s.batch.Add(seq.next, int32(seq.nPast), seq.slot, true)
			s.rows = append(s.rows, seq)
			seq.chunk = 1
		}
	}
	decodes := s.batch.Len()
	budget := s.cost.promptBudget(s.cfg.MaxDecodeGap, decodes, s.cfg.StepTokens-decodes)
	for _, seq := range s.active {
		if seq.prefilled() || seq.waiting || seq.requeued || budget <= 0 {
			continue
		}
		left := seq.fillTo - seq.nPast
		n := s.cells(seq, min(left, budget), false)
		// A fresh prompt's last position gives the first token's logits;
		// a preempted sequence refilling its cache samples nothing.
		fresh := seq.generated == 0
		for i := range n {
			pos := seq.nPast + i
			last := fresh && pos == seq.fillTo-1
			s.batch.Add(seq.tokens[pos], int32(pos), seq.slot, last)
		}
		if n == left && fresh {
			s.rows = append(s.rows, seq)
		}
		seq.chunk = n
		budget -= n
	}
	if s.batch.Len() == 0 { // every sequence waits for blocks or was preempted
		s.compact()
		return
	}
	start := s.cfg.Clock()
	err := s.forwardGuarded()
	s.cost.observe(s.batch.Len(), s.cfg.Clock().Sub(start))
	if err != nil {
		err = fmt.Errorf("decode: forward step of %d tokens: %w", s.batch.Len(), err)
		for _, seq := range s.active {
			if seq.chunk > 0 {
				s.release(seq, Event{Err: err}, "error")
			}
		}
		s.resetChunks()
		s.compact()
		return
	}
	for _, seq := range s.active {
		seq.nPast += seq.chunk
		s.commitBlocks(seq)
	}
	s.resetChunks()
	now := time.Now()
	for i, seq := range s.rows {
		s.pickAndEmit(i, seq, now)
	}
	s.compact()
}

// pickAndEmit samples row i for seq (or takes the engine's pick) and emits
// it. A panic in this work, seq's alone, ends seq with an error wrapping
// ErrInternal.
func (s *Scheduler) pickAndEmit(i int, seq *sequence, now time.Time) {
	defer s.recoverSeq(seq, "sampling and emitting a token")
	vocab := s.eng.VocabSize()
	row := s.logits[i*vocab : (i+1)*vocab]
	var got Sampled
	var err error
	switch {
	case s.picker == nil || s.picks[i] == nil:
		got, err = seq.sampler.Sample(row)
	case s.toks[i] >= int32(vocab):
		err = fmt.Errorf("%w: the engine picked token %d outside the vocabulary of %d", ErrInternal, s.toks[i], vocab)
	case s.toks[i] >= 0:
		got = Sampled{Token: s.toks[i]}
	default: // the engine left the pick to the host
		got, err = seq.sampler.SampleDrawn(row, s.picks[i].U)
	}
	s.emit(seq, got, err, now)
}

// recoverSeq, deferred around work done for seq alone, turns a panic into
// the end of seq with an error wrapping ErrInternal.
func (s *Scheduler) recoverSeq(seq *sequence, what string) {
	v := recover()
	if v == nil {
		return
	}
	s.panicked(what, v, debug.Stack())
	if !seq.done {
		s.release(seq, Event{Err: fmt.Errorf("%w: %s panicked: %v", ErrInternal, what, v)}, "error")
	}
}

// forwardGuarded is forward with a panic of the engine turned into an
// error wrapping ErrInternal, which ends the step's requests.
func (s *Scheduler) forwardGuarded() (err error) {
	defer func() {
		if v := recover(); v != nil {
			s.panicked("engine forward step", v, debug.Stack())
			err = fmt.Errorf("%w: the engine panicked: %v", ErrInternal, v)
		}
	}()
	return s.forward()
}

// forward runs the step's batch: with a Picker, the rows whose samplers
// allow it are picked by the engine and only their tokens come back.
func (s *Scheduler) forward() error {
	if s.picker == nil {
		return s.eng.Forward(&s.batch, s.logits)
	}
	s.picks = s.picks[:0]
	for i, seq := range s.rows {
		var p *Pick
		if seq.sampler.OnDevice() {
			s.pickBuf[i] = seq.sampler.Pick()
			p = &s.pickBuf[i]
		}
		s.picks = append(s.picks, p)
	}
	return s.picker.ForwardPick(&s.batch, s.picks, s.toks[:len(s.rows)], s.logits)
}

func (s *Scheduler) resetChunks() {
	for _, seq := range s.active {
		seq.chunk = 0
	}
}

// emit records seq's next token (or the error picking it) and streams it
// or ends the sequence; now is when the step's results came back.
func (s *Scheduler) emit(seq *sequence, got Sampled, err error, now time.Time) {
	if err != nil {
		s.release(seq, Event{Err: err}, "error")
		return
	}
	if err := seq.sampler.AcceptSampled(got.Token); err != nil {
		s.release(seq, Event{Err: err}, "error")
		return
	}
	seq.tokens = append(seq.tokens, got.Token)
	seq.generated++
	if seq.generated == 1 {
		s.metrics.token(true, now.Sub(seq.submitted))
	} else {
		s.metrics.token(false, now.Sub(seq.lastToken))
	}
	seq.lastToken = now

	if !seq.req.IgnoreEOS && s.vocab.IsEOG(got.Token) {
		s.release(seq, Event{FinishReason: "stop", Text: seq.flush()}, "stop")
		return
	}
	text, stopped := seq.stop.Push(seq.dec.Add(got.Token))
	ev := Event{Token: got.Token, Text: text}
	if seq.req.Sampling.Logprobs || seq.req.Sampling.TopLogprobs > 0 {
		ev.Logprob = got.Logprob
		ev.Top = append([]TokenLogprob(nil), got.Top...)
	}
	seq.stream.push(ev)
	switch {
	case stopped:
		s.release(seq, Event{FinishReason: "stop"}, "stop")
	case seq.req.MaxTokens > 0 && seq.generated >= seq.req.MaxTokens,
		seq.nPast+1 >= s.eng.ContextSize():
		s.release(seq, Event{FinishReason: "length", Text: seq.flush()}, "length")
	default:
		seq.next = got.Token
	}
}

// release ends a running sequence and frees its slot (compact removes it
// from active). The pool's gauges count its blocks free before its stream
// ends.
func (s *Scheduler) release(seq *sequence, final Event, outcome string) {
	s.dropBlocks(seq)
	s.publishKV()
	s.slots[seq.slot] = nil
	seq.done = true
	s.mu.Lock()
	s.inflight--
	s.mu.Unlock()
	s.end(seq, final, outcome)
}

// end sends the final event of seq, counted in the metrics first: a
// client that has read it sees its request among the finished ones.
func (s *Scheduler) end(seq *sequence, final Event, outcome string) {
	seq.done = true
	final.Token = -1
	final.Done = true
	final.Usage = Usage{PromptTokens: len(seq.req.Prompt), CompletionTokens: seq.generated}
	s.metrics.finish(outcome)
	seq.stream.push(final)
}

// compact removes ended sequences from active.
func (s *Scheduler) compact() {
	kept := s.active[:0]
	for _, seq := range s.active {
		if !seq.done && !seq.requeued {
			kept = append(kept, seq)
		}
	}
	clear(s.active[len(kept):])
	s.active = kept
	s.publishKV()
	s.mu.Lock()
	s.metrics.setOccupancy(len(s.queue), len(s.active), len(s.slots))
	s.mu.Unlock()
}

// abortAll ends every queued and running request with err.
func (s *Scheduler) abortAll(err error) {
	s.mu.Lock()
	s.closing = true
	queue := s.queue
	s.queue = nil
	s.inflight -= len(queue)
	s.mu.Unlock()
	for _, seq := range queue {
		s.end(seq, Event{Err: err}, "error")
	}
	for _, seq := range s.active {
		s.release(seq, Event{Err: err}, "error")
	}
	s.compact()
}
