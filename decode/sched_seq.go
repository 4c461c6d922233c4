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

	dec  TextDecoder  // made at Submit
	stop *StopMatcher // made at Submit

	slot int32 // set when the sequence takes a slot

	// group links the choices of one SubmitChoices call; the first is
	// the leader. A follower that is waiting takes no prefill until the
	// leader has the prompt in its slot, then copies it (SeqCopier).
	group   *choiceGroup
	waiting bool

	nPast     int   // positions of the slot's KV cache written so far
	chunk     int   // tokens this sequence has in the current batch
	next      int32 // token to feed in the next decode step
	generated int   // tokens sampled
	started   bool  // took a slot
	done      bool  // ended; removed from active at the end of the step

	submitted time.Time
	lastToken time.Time
}

// start binds the sequence to a slot; the KV cache of the slot is
// overwritten from position 0.
func (q *sequence) start(slot int32) {
	q.slot = slot
	q.started = true
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
