package decode

import (
	"context"
	"io"
	"sync"
)

// Event is one step of a request's output: a sampled token, or the end.
type Event struct {
	Token   int32          // the sampled token; -1 in the final event
	Text    string         // text released by this event (may be empty while held back)
	Logprob float32        // log-probability of Token, when the request asked for logprobs
	Top     []TokenLogprob // most likely alternatives, when the request asked for them

	Done         bool   // the last event of the request
	FinishReason string // "stop" or "length" in a successful final event
	Err          error  // why the request ended early (cancelled, engine failure, shutdown)
	Usage        Usage  // token counts, in the final event
}

// Usage counts the tokens of one request.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
}

// Stream carries a request's events from the scheduler to its consumer.
// The scheduler never blocks on a slow consumer: events queue up here.
type Stream struct {
	mu     sync.Mutex    // guards events, ended
	events []Event       // produced and not yet taken
	ended  bool          // the final event was taken
	notify chan struct{} // capacity 1: signals that events is non-empty
}

func newStream() *Stream {
	return &Stream{notify: make(chan struct{}, 1)}
}

// push appends an event and wakes the consumer.
func (s *Stream) push(ev Event) {
	s.mu.Lock()
	s.events = append(s.events, ev)
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// Ready returns a channel that receives a value after events are queued
// (and now and then with none queued). A consumer that reads a stream in
// batches calls Drain, and waits on Ready when Drain found nothing.
func (s *Stream) Ready() <-chan struct{} { return s.notify }

// Drain appends every queued event to dst without waiting and returns it,
// with whether the final event (Done) has now been taken.
func (s *Stream) Drain(dst []Event) ([]Event, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return dst, true
	}
	for i, ev := range s.events {
		dst = append(dst, ev)
		s.events[i] = Event{}
		if ev.Done {
			s.ended = true
			break
		}
	}
	s.events = s.events[:0]
	return dst, s.ended
}

// Next returns the next event, waiting for it. After the final event
// (Done) it returns io.EOF; when ctx ends first it returns ctx.Err().
func (s *Stream) Next(ctx context.Context) (Event, error) {
	for {
		s.mu.Lock()
		if s.ended {
			s.mu.Unlock()
			return Event{}, io.EOF
		}
		if len(s.events) > 0 {
			ev := s.events[0]
			s.events[0] = Event{}
			s.events = s.events[1:]
			s.ended = ev.Done
			s.mu.Unlock()
			return ev, nil
		}
		s.mu.Unlock()
		select {
		case <-s.notify:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}
