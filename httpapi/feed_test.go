package httpapi

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"llmserve/decode"
)

// finishedStreams submits greedy requests of the given lengths to a gated
// scheduler and returns their streams once every event is queued.
func finishedStreams(t *testing.T, e *testEnv, lengths ...int) []*decode.Stream {
	t.Helper()
	var streams []*decode.Stream
	steps := 0
	for _, n := range lengths {
		st, err := e.sched.Submit(context.Background(), decode.Request{Prompt: []int32{fakeBOS, 5}, MaxTokens: n, IgnoreEOS: true})
		if err != nil {
			t.Fatal(err)
		}
		streams = append(streams, st)
		steps = max(steps, n)
	}
	for range steps { // the prompts fill in the first step; then one step per token
		e.eng.gate <- struct{}{}
	}
	for deadline := time.Now().Add(10 * time.Second); !e.sched.Idle(); {
		if time.Now().After(deadline) {
			t.Fatal("the requests did not finish")
		}
		time.Sleep(time.Millisecond)
	}
	return streams
}

// TestFeedBatches checks that a feed hands over everything queued on its
// streams at once, in order within each stream, and ends after every
// stream's final event.
func TestFeedBatches(t *testing.T) {
	e := newEnv(t, envOptions{gated: true})
	lengths := []int{5, 3}
	streams := finishedStreams(t, e, lengths...)
	f := newFeed(context.Background(), streams)
	batch := f.next()
	tokens := make([]int, len(lengths))
	ended := make([]bool, len(lengths))
	for _, ie := range batch {
		switch {
		case ended[ie.index]:
			t.Errorf("stream %d: event after the final one", ie.index)
		case ie.ev.Done:
			ended[ie.index] = true
		default:
			tokens[ie.index]++
		}
	}
	for i, n := range lengths {
		if tokens[i] != n || !ended[i] {
			t.Errorf("stream %d: %d tokens (ended %v) in the batch, want %d and the end", i, tokens[i], ended[i], n)
		}
	}
	if rest := f.next(); rest != nil {
		t.Errorf("events after every stream ended: %+v", rest)
	}
}

// writeCounter counts the writes that reach the client.
type writeCounter struct {
	*httptest.ResponseRecorder
	writes int
}

func (w *writeCounter) Write(p []byte) (int, error) {
	w.writes++
	return w.ResponseRecorder.Write(p)
}

// TestStreamBacklogOneWrite checks that chunks queued while the handler
// was busy leave together: a finished request of 6 tokens is written with
// one write for its chunks and one for the closing event.
func TestStreamBacklogOneWrite(t *testing.T) {
	e := newEnv(t, envOptions{gated: true})
	streams := finishedStreams(t, e, 6)
	w := &writeCounter{ResponseRecorder: httptest.NewRecorder()}
	g := generation{ctx: context.Background(), model: e.api.model.Load(), streams: streams}
	streamCompletion(w, g, completionResponse{ID: "cmpl-x", Object: "text_completion", Model: "fake"})
	events := sseEvents(t, w.Body.Bytes())
	if text, finish, _ := streamText(t, events); len(text) != 6 || finish != "length" {
		t.Errorf("streamed %q (%s), want 6 characters (length)", text, finish)
	}
	if w.writes != 2 {
		t.Errorf("%d writes for %d events, want 2", w.writes, len(events))
	}
}
