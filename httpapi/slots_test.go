package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// getSlots fetches /slots.
func getSlots(t *testing.T, e *testEnv) []slotJSON {
	t.Helper()
	code, body := e.do(t, "GET", "/slots", "")
	if code != http.StatusOK {
		t.Fatalf("/slots: status %d: %s", code, body)
	}
	var s []slotJSON
	if err := json.Unmarshal(body, &s); err != nil {
		t.Fatalf("/slots: %v: %s", err, body)
	}
	return s
}

// waitForSlots polls /slots until ok holds or 10 s pass.
func waitForSlots(t *testing.T, e *testEnv, what string, ok func([]slotJSON) bool) []slotJSON {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := getSlots(t, e)
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("/slots never showed %s: %+v", what, s)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func allIdle(s []slotJSON) bool {
	for _, sl := range s {
		if sl.IsProcessing || sl.State != "idle" || sl.NextToken.NDecoded != 0 {
			return false
		}
	}
	return true
}

// TestSlotsThroughARequest follows a streamed request in /slots: idle
// slots, then one processing with its prompt and tokens so far, then idle
// again once the client goes away.
func TestSlotsThroughARequest(t *testing.T) {
	e := newEnv(t, envOptions{slots: 2, gated: true})
	s := getSlots(t, e)
	if len(s) != 2 || !allIdle(s) || s[0].ID != 0 || s[1].ID != 1 || s[0].NCtx != 256 {
		t.Fatalf("at start: %+v", s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := e.send(t, ctx, "POST", "/v1/completions", `{"prompt":"abc","max_tokens":50,"stream":true}`)
	defer resp.Body.Close()
	for step := 1; step <= 2; step++ {
		e.eng.gate <- struct{}{}
		waitForSlots(t, e, fmt.Sprintf("slot 0 busy with %d tokens", step), func(s []slotJSON) bool {
			b := s[0]
			return b.IsProcessing && b.State == "processing" && b.NPromptTokens > 0 &&
				b.NPromptTokensProcessed == b.NPromptTokens && b.NextToken.NDecoded == step &&
				b.NextToken.NRemain == 50-step && b.NextToken.HasNextToken && !s[1].IsProcessing
		})
	}
	// fail_on_no_slot answers 200 while a slot is free.
	if code, body := e.do(t, "GET", "/slots?fail_on_no_slot=1", ""); code != http.StatusOK {
		t.Errorf("fail_on_no_slot with a free slot: status %d: %s", code, body)
	}
	cancel()
	resp.Body.Close()
	stop := make(chan struct{})
	fed := make(chan struct{})
	go func() {
		defer close(fed)
		for {
			select {
			case e.eng.gate <- struct{}{}:
			case <-stop:
				return
			}
		}
	}()
	defer func() { close(stop); <-fed }()
	waitForSlots(t, e, "every slot idle after the client left", allIdle)
}

// TestSlotsFailOnNoSlot checks llama-server's ?fail_on_no_slot=1: 503
// when every slot is busy.
func TestSlotsFailOnNoSlot(t *testing.T) {
	e := newEnv(t, envOptions{slots: 1, gated: true})
	resp := e.send(t, t.Context(), "POST", "/v1/completions", `{"prompt":"a","max_tokens":20,"stream":true}`)
	defer resp.Body.Close()
	e.eng.gate <- struct{}{}
	waitForSlots(t, e, "the slot busy", func(s []slotJSON) bool { return s[0].IsProcessing })
	code, body := e.do(t, "GET", "/slots?fail_on_no_slot=1", "")
	if code != http.StatusServiceUnavailable {
		t.Errorf("status %d, want 503: %s", code, body)
	}
}

// TestNoSlots checks --no-slots: GET /slots answers 501 with a JSON error.
func TestNoSlots(t *testing.T) {
	e := newEnv(t, envOptions{config: func(c *Config) { c.NoSlots = true }})
	code, body := e.do(t, "GET", "/slots", "")
	if code != http.StatusNotImplemented || errorOf(t, body).Message == "" {
		t.Errorf("status %d, want 501: %s", code, body)
	}
}
