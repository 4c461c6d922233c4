package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"llmserve/decode"
	"llmserve/internal/servertest"
	"llmserve/model/chat"
)

// panicTokenizer panics where a tokenizer should not.
type panicTokenizer struct{ fakeTokenizer }

func (panicTokenizer) Encode(string, bool, bool) ([]int32, error) { panic("tokenizer bug") }

// TestHandlerPanicIs500 checks that a panicking handler ends its request
// with a 500 JSON error, logged with its stack and counted, and that the
// server goes on serving.
func TestHandlerPanicIs500(t *testing.T) {
	var log servertest.Log
	e := newEnv(t, envOptions{log: &log})
	tmpl, err := chat.Fallback("chatml")
	if err != nil {
		t.Fatal(err)
	}
	e.api.SetModel(&Model{Name: "fake", Scheduler: e.sched, Tokenizer: panicTokenizer{}, Chat: renderer(t, tmpl), Created: time.Unix(0, 0)})
	for range 2 {
		code, body := e.do(t, "POST", "/tokenize", `{"content":"abc"}`)
		if code != http.StatusInternalServerError {
			t.Fatalf("status %d, want 500: %s", code, body)
		}
		if got := errorOf(t, body); got.Type != "server_error" || got.Code != "internal_error" {
			t.Errorf("error %+v", got)
		}
	}
	if code, _ := e.do(t, "GET", "/health", ""); code != 200 {
		t.Errorf("/health %d after a panic", code)
	}
	_, metrics := e.do(t, "GET", "/metrics", "")
	if !strings.Contains(string(metrics), "llmserve_http_panics_total 2\n") {
		t.Errorf("panics not counted:\n%s", metrics)
	}
	if !strings.Contains(string(metrics), `llmserve_http_requests_total{code="500"} 2`) {
		t.Errorf("the 500s not counted:\n%s", metrics)
	}
	logged := strings.Join(logLines(&log), "\n")
	if !strings.Contains(logged, "tokenizer bug") || !strings.Contains(logged, "recover_test.go") {
		t.Errorf("the panic and its stack are not in the log:\n%s", logged)
	}
}

// TestErrorMapping checks errors whose status comes from toAPIError alone.
func TestErrorMapping(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		status int
		typ    string
		code   any
	}{
		{"decode internal", fmt.Errorf("decode: step: %w", decode.ErrInternal), 500, "server_error", "internal_error"},
		{"unknown", errors.New("something odd"), 500, "server_error", nil},
		{"queue full", decode.ErrQueueFull, 429, "rate_limit_error", "queue_full"},
		{"loading", errLoading, 503, "server_error", "model_loading"},
		{"body stalled", &bodyReadError{fmt.Errorf("read: %w", errDeadline{})}, 408, "invalid_request_error", "request_timeout"},
		{"body broken", &bodyReadError{errors.New("malformed chunked encoding")}, 400, "invalid_request_error", "bad_request_body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := toAPIError(tt.err)
			if got.Status != tt.status || got.Type != tt.typ || got.Code != tt.code {
				t.Errorf("%+v, want %d %s %v", got, tt.status, tt.typ, tt.code)
			}
		})
	}
}

// errDeadline is a read deadline that passed, as net reports it.
type errDeadline struct{}

func (errDeadline) Error() string   { return "i/o timeout" }
func (errDeadline) Is(e error) bool { return e == os.ErrDeadlineExceeded }

// TestRetryAfter checks Retry-After on 429 and on 503 while loading.
func TestRetryAfter(t *testing.T) {
	loading := newEnv(t, envOptions{notLoaded: true})
	for _, path := range []string{"/health", "/v1/completions"} {
		method := "GET"
		if path != "/health" {
			method = "POST"
		}
		resp := loading.send(t, t.Context(), method, path, `{"prompt":"a"}`)
		resp.Body.Close()
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != retryLoading {
			t.Errorf("%s while loading: %d, Retry-After %q", path, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
	busy := newEnv(t, envOptions{slots: 1, queue: 1, gated: true})
	for range 2 {
		resp := busy.send(t, t.Context(), "POST", "/v1/completions", `{"prompt":"a","max_tokens":2,"stream":true}`)
		defer resp.Body.Close()
	}
	resp := busy.send(t, t.Context(), "POST", "/v1/completions", `{"prompt":"a","max_tokens":2}`)
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != retryBusy {
		t.Errorf("queue full: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

// TestConnectionGauges checks that /metrics shows the goroutines and the
// open connections, and that the connection count follows a client.
func TestConnectionGauges(t *testing.T) {
	e := newEnv(t, envOptions{})
	addr := serveFull(t, e)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body := string(readAll(t, resp))
	resp.Body.Close()
	for _, want := range []string{"\nllmserve_http_open_connections 1\n", "\ngo_goroutines "} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
	tr.CloseIdleConnections()
	waitOpenConns(t, e, 0)
}
