package decode

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// waitSlots polls Slots until want holds or 10 s pass, then returns the
// last snapshot.
func waitSlots(t *testing.T, s *Scheduler, what string, want func([]SlotInfo) bool) []SlotInfo {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := s.Slots()
		if want(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("slots never became %s: %+v", what, got)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSlotsFollowARequest checks each published field through a request's
// life: idle before, processing with its counts while it runs, idle again
// once it is cancelled; Slots is read all along from another goroutine
// (the race detector checks the publishing).
func TestSlotsFollowARequest(t *testing.T) {
	eng := newFakeEngine(32, 256, 2)
	eng.gate = make(chan struct{})
	s := startScheduler(t, eng, SchedulerConfig{StepTokens: 8})
	if n := s.NumSlots(); n != 2 {
		t.Fatalf("NumSlots = %d, want 2", n)
	}
	idle := func(got []SlotInfo) bool {
		for i, sl := range got {
			if sl != (SlotInfo{ID: i}) {
				return false
			}
		}
		return len(got) == 2
	}
	waitSlots(t, s, "idle at start", idle)

	stopReading := make(chan struct{})
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		for {
			select {
			case <-stopReading:
				return
			default:
				_ = s.Slots()
			}
		}
	}()
	defer func() { close(stopReading); readers.Wait() }()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := s.Submit(ctx, Request{Prompt: prompt(5, 0), MaxTokens: 100, IgnoreEOS: true}); err != nil {
		t.Fatal(err)
	}
	for step := 1; step <= 3; step++ {
		eng.gate <- struct{}{}
		want := []SlotInfo{
			{ID: 0, State: SlotProcessing, PromptTokens: 5, PromptProcessed: 5, Generated: step, MaxTokens: 100},
			{ID: 1},
		}
		waitSlots(t, s, fmt.Sprintf("%+v after step %d", want, step), func(got []SlotInfo) bool {
			return len(got) == 2 && got[0] == want[0] && got[1] == want[1]
		})
	}
	cancel()
	feed(t, eng)
	waitSlots(t, s, "idle after the cancel", idle)
}

// TestSlotsShowPrefill checks that a prompt filled over several steps
// shows how much of it is in the KV cache.
func TestSlotsShowPrefill(t *testing.T) {
	eng := newFakeEngine(32, 256, 1)
	eng.gate = make(chan struct{})
	s := startScheduler(t, eng, SchedulerConfig{StepTokens: 8})
	st, err := s.Submit(context.Background(), Request{Prompt: prompt(20, 1), MaxTokens: 2, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, processed := range []int{8, 16} {
		eng.gate <- struct{}{}
		want := SlotInfo{ID: 0, State: SlotProcessing, PromptTokens: 20, PromptProcessed: processed, MaxTokens: 2}
		waitSlots(t, s, fmt.Sprintf("%+v", want), func(got []SlotInfo) bool { return len(got) == 1 && got[0] == want })
	}
	feed(t, eng)
	collect(t, st)
	waitSlots(t, s, "idle after the request", func(got []SlotInfo) bool { return got[0] == SlotInfo{ID: 0} })
}

func TestSlotStateString(t *testing.T) {
	for _, c := range []struct {
		s    SlotState
		want string
	}{{SlotIdle, "idle"}, {SlotProcessing, "processing"}} {
		if got := c.s.String(); got != c.want {
			t.Errorf("%d.String() = %q, want %q", c.s, got, c.want)
		}
	}
}
