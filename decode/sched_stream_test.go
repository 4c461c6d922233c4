package decode

import (
	"context"
	"io"
	"testing"
)

// TestStreamDrain checks that Drain takes every queued event in order,
// stops at the final one, and that Ready signals pushes.
func TestStreamDrain(t *testing.T) {
	s := newStream()
	if got, end := s.Drain(nil); len(got) != 0 || end {
		t.Fatalf("empty stream drained %v (ended %v)", got, end)
	}
	s.push(Event{Token: 1, Text: "a"})
	s.push(Event{Token: 2, Text: "b"})
	select {
	case <-s.Ready():
	default:
		t.Fatal("Ready not signalled after a push")
	}
	got, end := s.Drain(nil)
	if len(got) != 2 || got[0].Token != 1 || got[1].Text != "b" || end {
		t.Fatalf("drained %+v (ended %v), want tokens 1, 2", got, end)
	}
	s.push(Event{Token: 3})
	s.push(Event{Token: -1, Done: true, FinishReason: "length"})
	got, end = s.Drain(got[:0])
	if len(got) != 2 || got[0].Token != 3 || !got[1].Done || !end {
		t.Fatalf("drained %+v (ended %v), want token 3 then the final event", got, end)
	}
	if got, end := s.Drain(nil); len(got) != 0 || !end {
		t.Fatalf("ended stream drained %v (ended %v)", got, end)
	}
	if _, err := s.Next(context.Background()); err != io.EOF {
		t.Fatalf("Next after the final event: %v, want io.EOF", err)
	}
}
