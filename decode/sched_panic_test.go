package decode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// panicVocab is fakeVocab whose n-th text decoder (counting from 1)
// panics when it decodes its third token, and whose decoder number
// panicNew panics when made.
type panicVocab struct {
	made     atomic.Int32
	panicAt  int32
	panicNew int32
}

func (*panicVocab) IsEOG(id int32) bool { return id == fakeEOS }

func (v *panicVocab) NewTextDecoder() TextDecoder {
	n := v.made.Add(1)
	if n == v.panicNew {
		panic("decoder construction failed")
	}
	return &panicDecoder{panics: n == v.panicAt}
}

type panicDecoder struct {
	fakeTextDecoder
	panics bool
	n      int
}

func (d *panicDecoder) Add(id int32) string {
	d.n++
	if d.panics && d.n == 3 {
		var m map[string]int
		m["boom"] = 1 // a real runtime panic: assignment to a nil map
	}
	return d.fakeTextDecoder.Add(id)
}

// panicLog records OnPanic calls.
type panicLog struct {
	mu    sync.Mutex
	where []string
	stack [][]byte
}

func (l *panicLog) on(where string, _ any, stack []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.where = append(l.where, where)
	l.stack = append(l.stack, stack)
}

func (l *panicLog) calls() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.where)
}

// TestSchedulerPanicInRequestWork: a decoder that panics for one request
// ends that request with ErrInternal, while the requests beside it give
// the tokens they give alone; the panic is reported with its stack and
// counted.
func TestSchedulerPanicInRequestWork(t *testing.T) {
	reqs := []Request{seededRequest(1), seededRequest(2), seededRequest(3)}
	for i := range reqs {
		reqs[i].IgnoreEOS = true
	}
	alone := startScheduler(t, newFakeEngine(32, 128, 4), SchedulerConfig{MaxQueue: 8})
	want := make([]result, len(reqs))
	for i, r := range reqs {
		want[i] = run(t, alone, r)
	}
	var log panicLog
	vocab := &panicVocab{panicAt: 2}
	s := startSchedulerVocab(t, newFakeEngine(32, 128, 4), vocab, SchedulerConfig{MaxQueue: 8, OnPanic: log.on})
	streams := make([]*Stream, len(reqs))
	for i, r := range reqs {
		st, err := s.Submit(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		streams[i] = st
	}
	for i, st := range streams {
		got := collect(t, st)
		if i == 1 {
			if !errors.Is(got.final.Err, ErrInternal) || len(got.tokens) != 2 {
				t.Errorf("panicking request ended with %v after %d tokens, want ErrInternal after 2", got.final.Err, len(got.tokens))
			}
			continue
		}
		if got.final.Err != nil || !slices.Equal(got.tokens, want[i].tokens) || got.text != want[i].text {
			t.Errorf("request %d beside a panicking one: %q (%v), alone %q", i, got.text, got.final.Err, want[i].text)
		}
	}
	if n := s.Metrics().Snapshot().Panics; n != 1 {
		t.Errorf("%d panics counted, want 1", n)
	}
	if log.calls() != 1 || !bytes.Contains(log.stack[0], []byte("panicDecoder")) {
		t.Errorf("OnPanic calls %v; the stack should name the panicking decoder", log.where)
	}
	// The loop goes on.
	if got := run(t, s, reqs[0]); !slices.Equal(got.tokens, want[0].tokens) {
		t.Errorf("after the panic: %q, want %q", got.text, want[0].text)
	}
}

// TestSchedulerPanicInSetup: a panic while building a request at Submit
// fails that Submit with ErrInternal.
func TestSchedulerPanicInSetup(t *testing.T) {
	var log panicLog
	s := startSchedulerVocab(t, newFakeEngine(32, 128, 2), &panicVocab{panicNew: 1}, SchedulerConfig{MaxQueue: 4, OnPanic: log.on})
	if _, err := s.Submit(context.Background(), seededRequest(1)); !errors.Is(err, ErrInternal) {
		t.Fatalf("Submit with a panicking decoder: %v, want ErrInternal", err)
	}
	if got := run(t, s, seededRequest(2)); got.final.Err != nil {
		t.Errorf("next request: %v", got.final.Err)
	}
	if log.calls() != 1 || s.Metrics().Snapshot().Panics != 1 {
		t.Errorf("%d OnPanic calls, %d counted, want 1 and 1", log.calls(), s.Metrics().Snapshot().Panics)
	}
}

// panicEngine is a fakeEngine whose Forward panics on call number panicAt
// (counting from 1).
type panicEngine struct {
	*fakeEngine
	calls   atomic.Int32
	panicAt int32
}

func (e *panicEngine) Forward(b *Batch, out []float32) error {
	if e.calls.Add(1) == e.panicAt {
		panic(fmt.Sprintf("kernel fault in a step of %d tokens", b.Len()))
	}
	return e.fakeEngine.Forward(b, out)
}

// TestSchedulerEnginePanic: a panic in Forward ends the requests of that
// step with ErrInternal, and later requests run.
func TestSchedulerEnginePanic(t *testing.T) {
	var log panicLog
	eng := &panicEngine{fakeEngine: newFakeEngine(32, 128, 2), panicAt: 3}
	s := startSchedulerVocab(t, eng, fakeVocab{}, SchedulerConfig{MaxQueue: 4, OnPanic: log.on})
	r := seededRequest(4)
	r.IgnoreEOS = true
	got := run(t, s, r)
	if !errors.Is(got.final.Err, ErrInternal) {
		t.Fatalf("request in the panicking step ended with %v, want ErrInternal", got.final.Err)
	}
	if log.calls() != 1 || log.where[0] != "engine forward step" {
		t.Errorf("OnPanic calls %v", log.where)
	}
	if got := run(t, s, r); got.final.Err != nil || len(got.tokens) != r.MaxTokens {
		t.Errorf("after the engine panic: %d tokens, %v", len(got.tokens), got.final.Err)
	}
}

// badPicker is a Picker that picks a token outside the vocabulary.
type badPicker struct{ *fakeEngine }

func (p badPicker) ForwardPick(b *Batch, picks []*Pick, toks []int32, logits []float32) error {
	if err := p.Forward(b, logits); err != nil {
		return err
	}
	for r := range picks {
		toks[r] = int32(p.vocab) + 5
	}
	return nil
}

func TestSchedulerEnginePickOutOfRange(t *testing.T) {
	s := startSchedulerVocab(t, badPicker{newFakeEngine(32, 128, 2)}, fakeVocab{}, SchedulerConfig{MaxQueue: 4})
	got := run(t, s, Request{Prompt: prompt(4, 1), MaxTokens: 5})
	if !errors.Is(got.final.Err, ErrInternal) || len(got.tokens) != 0 {
		t.Errorf("ended with %v after %d tokens, want ErrInternal after 0", got.final.Err, len(got.tokens))
	}
}

// gateVocab is fakeVocab whose second text decoder is made only after
// gate closes: it stands for a request whose setup takes long.
type gateVocab struct {
	made    atomic.Int32
	reached chan struct{} // closed when the second decoder is asked for
	gate    chan struct{}
}

func (*gateVocab) IsEOG(id int32) bool { return id == fakeEOS }

func (v *gateVocab) NewTextDecoder() TextDecoder {
	if v.made.Add(1) == 2 {
		close(v.reached)
		<-v.gate
	}
	return &fakeTextDecoder{}
}

// TestSchedulerSetupOutsideLoop: while one request's setup (its 100k stop
// strings, its decoder) is still being built, another stream keeps
// receiving a token in each step the test lets the engine run; then the
// large request runs.
func TestSchedulerSetupOutsideLoop(t *testing.T) {
	vocab := &gateVocab{reached: make(chan struct{}), gate: make(chan struct{})}
	eng := newFakeEngine(32, 256, 2)
	eng.gate = make(chan struct{})
	s := startSchedulerVocab(t, eng, vocab, SchedulerConfig{MaxQueue: 4})
	a, err := s.Submit(context.Background(), Request{Prompt: prompt(3, 1), MaxTokens: 200, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	stops := make([]string, 100_000)
	for i := range stops {
		stops[i] = fmt.Sprintf("#%05d", i) // never generated: the alphabet has no '#'
	}
	type submitted struct {
		st  *Stream
		err error
	}
	bDone := make(chan submitted, 1)
	go func() {
		st, err := s.Submit(context.Background(), Request{Prompt: prompt(5, 2), MaxTokens: 50, Stop: stops, IgnoreEOS: true})
		bDone <- submitted{st, err}
	}()
	timeout := time.After(20 * time.Second)
	select {
	case <-vocab.reached:
	case <-timeout:
		t.Fatal("the second request's setup never started")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a.Drain(nil)
	for i := range 20 {
		select {
		case eng.gate <- struct{}{}:
		case <-timeout:
			t.Fatalf("step %d: the scheduler does not step while a request's setup is under way", i)
		}
		if _, err := a.Next(ctx); err != nil {
			t.Fatalf("token %d of the other stream while a setup is under way: %v", i, err)
		}
	}
	close(vocab.gate)
	feed(t, eng)
	b := <-bDone
	if b.err != nil {
		t.Fatal(b.err)
	}
	if got := collect(t, b.st); got.final.Err != nil || len(got.tokens) != 50 {
		t.Errorf("request with 100k stop strings: %d tokens, %v", len(got.tokens), got.final.Err)
	}
	if got := collect(t, a); got.final.Err != nil {
		t.Errorf("other stream: %v", got.final.Err)
	}
}
