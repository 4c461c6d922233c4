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

	// tokens is the prompt and then every generated token: positions
	// below nPast are in the KV cache, and a generating sequence feeds
	// tokens[nPast] (= next) in its next step.
	tokens []int32
	// fillTo is the number of positions to prefill before decoding: the
	// prompt, or after a preemption everything but the last token.
	fillTo int
	// With a paged KV pool: the blocks of positions 0.. (the slot's
	// block table) and the prefix keys of its leading full blocks, as
	// far as they have been computed.
	table    []int32
	keys     []uint64
	requeued bool // preempted and queued again; removed from active at the end of the step

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
	q.requeued = false
}

// prefilled reports whether the whole prompt (or, after a preemption,
// everything but the token to feed next) is in the KV cache.
func (q *sequence) prefilled() bool { return q.nPast >= q.fillTo }

// flush releases the text still held by the decoder and the stop matcher.
func (q *sequence) flush() string {
	text, stopped := q.stop.Push(q.dec.Flush())
	if stopped {
		return text
	}
	return text + q.stop.Flush()
}
