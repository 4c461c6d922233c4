package decode

import (
	"context"
	"time"
)

// sequence is the state of one request inside the scheduler.
type sequence struct {
	req     Request
	ctx     context.Context
	stream  *Stream
	sampler *Sampler

	// Set when the sequence takes a slot.
	slot int32
	dec  TextDecoder
	stop *StopMatcher

	nPast     int   // positions of the slot's KV cache written so far
	chunk     int   // tokens this sequence has in the current batch
	next      int32 // token to feed in the next decode step
	generated int   // tokens sampled
	done      bool  // ended; removed from active at the end of the step

	submitted time.Time
	lastToken time.Time
}

// start binds the sequence to a slot; the KV cache of the slot is
// overwritten from position 0.
func (q *sequence) start(slot int32, vocab Vocab) {
	q.slot = slot
	q.dec = vocab.NewTextDecoder()
	q.stop = NewStopMatcher(q.req.Stop)
	for _, t := range q.req.Prompt {
		q.sampler.Accept(t)
	}
}

// prefilled reports whether the whole prompt is in the KV cache.
func (q *sequence) prefilled() bool { return q.nPast >= len(q.req.Prompt) }

// flush releases the text still held by the decoder and the stop matcher.
func (q *sequence) flush() string {
	text, stopped := q.stop.Push(q.dec.Flush())
	if stopped {
		return text
	}
	return text + q.stop.Flush()
}
