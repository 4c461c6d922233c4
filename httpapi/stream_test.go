package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestStreamCompletionFormat checks the bytes of a streamed completion:
// every event is "data: JSON\n\n", text arrives in chunks that add up to
// the non-streamed text, the finish chunk carries finish_reason, the usage
// chunk has no choices, and "data: [DONE]\n\n" ends the body.
func TestStreamCompletionFormat(t *testing.T) {
	e := newEnv(t, envOptions{})
	var whole completionResponse
	e.post(t, "/v1/completions", `{"prompt":"hello","max_tokens":9,"seed":11,"ignore_eos":true}`, &whole)

	resp := e.send(t, context.Background(), "POST", "/v1/completions",
		`{"prompt":"hello","max_tokens":9,"seed":11,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" || resp.StatusCode != 200 {
		t.Fatalf("status %d content type %q", resp.StatusCode, ct)
	}
	if !strings.HasSuffix(string(body), "\n\ndata: [DONE]\n\n") {
		t.Errorf("body does not end with the DONE event: %q", body[max(0, len(body)-60):])
	}
	events := sseEvents(t, body)
	text, finish, usage := streamText(t, events)
	if text != whole.Choices[0].Text || finish != "length" {
		t.Errorf("streamed %q (%s), want %q (length)", text, finish, whole.Choices[0].Text)
	}
	if usage == nil || *usage != *whole.Usage {
		t.Errorf("usage chunk %+v, want %+v", usage, whole.Usage)
	}
	// 9 text chunks, the finish chunk, the usage chunk and [DONE].
	if len(events) != 12 {
		t.Errorf("%d events, want 12: %q", len(events), events)
	}
	var first, last map[string]any
	json.Unmarshal([]byte(events[0]), &first)
	json.Unmarshal([]byte(events[len(events)-2]), &last)
	if first["object"] != "text_completion" || !strings.HasPrefix(first["id"].(string), "cmpl-") || first["model"] != "fake" {
		t.Errorf("first chunk %v", first)
	}
	if ch, ok := last["choices"].([]any); !ok || len(ch) != 0 || first["id"] != last["id"] {
		t.Errorf("usage chunk %v", last)
	}
}

func TestStreamChatFormat(t *testing.T) {
	e := newEnv(t, envOptions{})
	resp := e.send(t, context.Background(), "POST", "/v1/chat/completions",
		`{"messages":[{"role":"user","content":"hey"}],"max_tokens":4,"seed":2,"ignore_eos":true,"stream":true}`)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	events := sseEvents(t, body)
	text, finish, usage := streamText(t, events)
	if len(text) != 4 || finish != "length" || usage != nil {
		t.Errorf("text %q finish %q usage %v", text, finish, usage)
	}
	wantFirst := `"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`
	if !strings.HasSuffix(events[0], wantFirst) || !strings.Contains(events[0], `"object":"chat.completion.chunk"`) {
		t.Errorf("first chunk %s", events[0])
	}
	wantLast := `"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"length"}]}`
	if !strings.HasSuffix(events[len(events)-2], wantLast) {
		t.Errorf("finish chunk %s", events[len(events)-2])
	}
}

// TestStreamErrorAfterStart makes the engine fail mid-stream: the client
// gets an error event and then [DONE].
func TestStreamErrorAfterStart(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.eng.mu.Lock()
	e.eng.failAfter = 3
	e.eng.mu.Unlock()
	resp := e.send(t, context.Background(), "POST", "/v1/completions", `{"prompt":"a","max_tokens":10,"ignore_eos":true,"stream":true}`)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	events := sseEvents(t, body)
	n := len(events)
	if n < 2 || events[n-1] != "[DONE]" {
		t.Fatalf("events %q", events)
	}
	var ev errorBody
	if err := json.Unmarshal([]byte(events[n-2]), &ev); err != nil || ev.Error == nil ||
		!strings.Contains(ev.Error.Message, "fake engine failure") || ev.Error.Type != "server_error" {
		t.Errorf("error event %s", events[n-2])
	}
	if resp.StatusCode != 200 {
		t.Errorf("status %d: the stream had started", resp.StatusCode)
	}
}

// TestDisconnectFreesSlot drops a streaming client on a one-slot server:
// the next request must still run, and the drop is counted as cancelled.
func TestDisconnectFreesSlot(t *testing.T) {
	e := newEnv(t, envOptions{slots: 1, queue: 1, ctx: 100000})
	ctx, cancel := context.WithCancel(context.Background())
	resp := e.send(t, ctx, "POST", "/v1/completions", `{"prompt":"a","ignore_eos":true,"stream":true}`)
	r := bufio.NewReader(resp.Body)
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		var got completionResponse
		e.post(t, "/v1/completions", `{"prompt":"b","max_tokens":3,"ignore_eos":true}`, &got)
		if len(got.Choices) != 1 || len(got.Choices[0].Text) != 3 {
			t.Errorf("second request: %+v", got)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the slot of the dropped client was not freed")
	}
	if n := e.sched.Metrics().Snapshot().Finished["cancelled"]; n != 1 {
		t.Errorf("%d cancelled requests counted, want 1", n)
	}
}

// TestConcurrentSeededStreams runs 32 seeded streaming clients at once on
// 8 slots: each must get the text it gets when it runs alone. Steps take
// 100µs, as on a small model, so that the clients overlap.
func TestConcurrentSeededStreams(t *testing.T) {
	e := newEnv(t, envOptions{slots: 8, queue: 32, stepDelay: 100 * time.Microsecond})
	body := func(i int) string {
		return fmt.Sprintf(`{"prompt":"%s","max_tokens":%d,"seed":%d,"temperature":0.9,"top_k":0,"top_p":0.9,"stream":true}`,
			strings.Repeat("ab ", 1+i%9), 5+i%13, 100+i)
	}
	stream := func(i int) (string, string) {
		resp := e.send(t, context.Background(), "POST", "/v1/completions", body(i))
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Error(err)
			return "", ""
		}
		text, finish, _ := streamText(t, sseEvents(t, b))
		return text, finish
	}
	const n = 32
	var alone [n][2]string
	for i := range n {
		alone[i][0], alone[i][1] = stream(i)
	}
	var together [n][2]string
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { together[i][0], together[i][1] = stream(i) })
	}
	wg.Wait()
	e.eng.mu.Lock()
	if e.eng.maxRows < 2 {
		t.Errorf("no step sampled more than one sequence: the clients never ran together")
	}
	e.eng.mu.Unlock()
	for i := range n {
		if together[i] != alone[i] {
			t.Errorf("client %d: %q together, %q alone", i, together[i], alone[i])
		}
	}
}

// TestStreamEndsOnShutdown stops the scheduler under a running stream, as
// the server does when its shutdown timeout passes: the client gets a
// shutting_down error event and [DONE], and new requests get 503.
func TestStreamEndsOnShutdown(t *testing.T) {
	e := newEnv(t, envOptions{ctx: 100000})
	resp := e.send(t, context.Background(), "POST", "/v1/chat/completions",
		`{"messages":[{"role":"user","content":"a"}],"ignore_eos":true,"stream":true}`)
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	e.sched.Shutdown()
	e.stop()
	rest, _ := io.ReadAll(r)
	events := sseEvents(t, rest[1:]) // rest starts with the blank line ending the first event
	n := len(events)
	if n < 2 || events[n-1] != "[DONE]" || !strings.Contains(events[n-2], `"code":"shutting_down"`) {
		t.Errorf("stream ended with %q", events[max(0, n-2):])
	}
	code, body := e.do(t, "POST", "/v1/completions", `{"prompt":"a"}`)
	if code != http.StatusServiceUnavailable || errorOf(t, body).Code != "shutting_down" {
		t.Errorf("request after shutdown: %d %s", code, body)
	}
}
