package decode

import (
	"context"
	"fmt"
	"runtime/debug"
)

// SeqCopier is an Engine that can copy the first n positions of one
// sequence slot's KV cache to another slot, so that choices of one prompt
// compute it once.
type SeqCopier interface {
	CopySeq(src, dst int32, n int) error
}

// choiceGroup is the choices of one SubmitChoices call.
type choiceGroup struct {
	leader *sequence // choice 0: prefills the prompt for all
}

// SubmitChoices queues n generations of one request (the "n" of the OpenAI
// API): choice i draws from the random stream seeded with Seed+i. Either
// every choice is queued or none is. The choices end with ctx.
//
// With an engine that is a SeqCopier the choices share the prompt's
// processing: choice 0 prefills it, and each other choice copies all but
// its last position from choice 0's slot and computes only that last
// position (which gives it its own logits). With a PagedEngine the other
// choices share choice 0's full blocks of the prompt instead, all but the
// one with the last position, and compute the rest. Each choice's tokens are
// those of a separate request with its seed.
func (s *Scheduler) SubmitChoices(ctx context.Context, r Request, n int) ([]*Stream, error) {
	if n < 1 {
		s.metrics.reject("invalid")
		return nil, fmt.Errorf("%w: %d choices", ErrInvalidSampling, n)
	}
	if n > s.Capacity() {
		s.metrics.reject("invalid")
		return nil, fmt.Errorf("%w: %d choices, but at most %d requests can be queued or running", ErrInvalidSampling, n, s.Capacity())
	}
	if err := s.check(r); err != nil {
		s.metrics.reject("invalid")
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	seqs := make([]*sequence, n)
	streams := make([]*Stream, n)
	_, share := s.eng.(SeqCopier)
	if s.paged != nil {
		share = (len(r.Prompt)-1)/s.paged.layout.BlockSize > 0
	}
	share = share && n > 1 && len(r.Prompt) > 1
	var group *choiceGroup
	for i := range n {
		req := r
		req.Sampling.Seed += uint64(i)
		seq, err := s.newSequence(ctx, req)
		if err != nil {
			cancel()
			s.metrics.reject(rejectReason(err))
			return nil, err
		}
		if share {
			if i == 0 {
				group = &choiceGroup{leader: seq}
			} else {
				seq.waiting = true
			}
			seq.group = group
		}
		seqs[i], streams[i] = seq, seq.stream
	}
	if err := s.enqueueAll(seqs); err != nil {
		cancel()
		return nil, err
	}
	context.AfterFunc(ctx, cancel) // the derived context ends with the caller's
	return streams, nil
}

// enqueueAll queues every sequence or, when the scheduler is closing or
// has no room for all, none.
func (s *Scheduler) enqueueAll(seqs []*sequence) error {
	s.mu.Lock()
	switch {
	case s.closing:
		s.mu.Unlock()
		s.metrics.reject("shutting_down")
		return ErrShuttingDown
	case s.inflight+len(seqs) > len(s.slots)+s.cfg.MaxQueue:
		s.mu.Unlock()
		s.metrics.reject("queue_full")
		return ErrQueueFull
	}
	s.queue = append(s.queue, seqs...)
	s.inflight += len(seqs)
	s.mu.Unlock()
	s.signal()
	return nil
}

// sharePrefills lets waiting choices go on: once their leader has all but
// the last prompt position in its slot, they copy those positions and
// prefill the last one; when the leader is gone (or never started) they
// prefill the whole prompt themselves.
func (s *Scheduler) sharePrefills() {
	for _, seq := range s.active {
		if !seq.waiting {
			continue
		}
		l := seq.group.leader
		n := len(seq.req.Prompt) - 1
		switch {
		case l.done || !l.started || l.requeued:
			seq.waiting = false
		case s.paged != nil:
			seq.waiting = !s.sharePaged(seq, l)
		case l.nPast >= n:
			seq.waiting = false
			if s.copySeq(l.slot, seq.slot, n) {
				seq.nPast = n
				s.metrics.sharedPrompt(n)
			}
		}
	}
}

// copySeq copies n KV positions between slots, reporting whether it did;
// a failure or panic leaves the choice to prefill by itself.
func (s *Scheduler) copySeq(src, dst int32, n int) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			s.panicked("copying a choice's prompt", v, debug.Stack())
			ok = false
		}
	}()
	return s.eng.(SeqCopier).CopySeq(src, dst, n) == nil
}
