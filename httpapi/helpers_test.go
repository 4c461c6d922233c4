package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"llmserve/decode"
	"llmserve/model/chat"
)

// testEnv is a running API over a fake engine.
type testEnv struct {
	srv   *httptest.Server
	api   *Server
	eng   *fakeEngine
	sched *decode.Scheduler
	key   string
	stop  context.CancelFunc // ends the scheduler's Run
}

type envOptions struct {
	ctx, slots, queue int
	key               string
	cors              []string
	gated             bool
	stepDelay         time.Duration // least time of one engine step
	notLoaded         bool
	maxBody           int64
	bodyTimeout       time.Duration
	log               io.Writer     // request log; nil: discarded
	config            func(*Config) // when set, changes the server's Config before New
}

func newEnv(t testing.TB, o envOptions) *testEnv {
	t.Helper()
	if o.ctx == 0 {
		o.ctx = 256
	}
	if o.slots == 0 {
		o.slots = 4
	}
	eng := newFakeEngine(o.ctx, o.slots)
	if o.gated {
		eng.gate = make(chan struct{})
	}
	eng.delay = o.stepDelay
	sched, err := decode.NewScheduler(eng, fakeVocab{}, decode.SchedulerConfig{MaxQueue: o.queue, StepTokens: 64})
	if err != nil {
		t.Fatal(err)
	}
	stop := runScheduler(t, sched)
	logger := zerolog.Nop()
	if o.log != nil {
		logger = zerolog.New(o.log)
	}
	cfg := Config{ModelName: "fake", APIKey: o.key, CORSOrigins: o.cors, MaxBodyBytes: o.maxBody, BodyTimeout: o.bodyTimeout, Logger: logger}
	if o.config != nil {
		o.config(&cfg)
	}
	api := New(cfg)
	tmpl, err := chat.Fallback("chatml")
	if err != nil {
		t.Fatal(err)
	}
	if !o.notLoaded {
		api.SetModel(&Model{Name: "fake", Scheduler: sched, Tokenizer: fakeTokenizer{}, Chat: renderer(t, tmpl), Created: time.Unix(1700000000, 0)})
	}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(func() {
		srv.Close()
		stop()
		if eng.gate != nil {
			close(eng.gate)
		}
	})
	return &testEnv{srv: srv, api: api, eng: eng, sched: sched, key: o.key, stop: stop}
}

// do sends a request and returns the status and body.
func (e *testEnv) do(t *testing.T, method, path, body string) (int, []byte) {
	t.Helper()
	resp := e.send(t, context.Background(), method, path, body)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func (e *testEnv) send(t *testing.T, ctx context.Context, method, path, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, e.srv.URL+path, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	if e.key != "" {
		req.Header.Set("Authorization", "Bearer "+e.key)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// post sends a JSON body and decodes a 200 response into v.
func (e *testEnv) post(t *testing.T, path, body string, v any) {
	t.Helper()
	code, b := e.do(t, "POST", path, body)
	if code != http.StatusOK {
		t.Fatalf("POST %s %s: status %d: %s", path, body, code, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("POST %s: %v in %s", path, err, b)
	}
}

// sseEvents splits a server-sent event body into its data payloads, and
// checks that every event is exactly "data: PAYLOAD\n\n".
func sseEvents(t *testing.T, body []byte) []string {
	t.Helper()
	var out []string
	for len(body) > 0 {
		if !bytes.HasPrefix(body, []byte("data: ")) {
			t.Fatalf("event does not start with 'data: ': %q", body)
		}
		end := bytes.Index(body, []byte("\n\n"))
		if end < 0 {
			t.Fatalf("event not ended by a blank line: %q", body)
		}
		payload := body[len("data: "):end]
		if bytes.Contains(payload, []byte("\n")) {
			t.Fatalf("event spans several lines: %q", payload)
		}
		out = append(out, string(payload))
		body = body[end+2:]
	}
	return out
}

// streamText concatenates the text of completion or chat chunks, returning
// it with the finish reason and the usage chunk (if any).
func streamText(t *testing.T, events []string) (text, finish string, usage *usageJSON) {
	t.Helper()
	if len(events) == 0 || events[len(events)-1] != "[DONE]" {
		t.Fatalf("stream does not end with [DONE]: %q", events)
	}
	for _, ev := range events[:len(events)-1] {
		var chunk struct {
			Choices []struct {
				Text  string `json:"text"`
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *usageJSON `json:"usage"`
			Error *apiError  `json:"error"`
		}
		if err := json.Unmarshal([]byte(ev), &chunk); err != nil {
			t.Fatalf("chunk %q: %v", ev, err)
		}
		if chunk.Error != nil {
			t.Fatalf("error event: %+v", chunk.Error)
		}
		if chunk.Usage != nil {
			usage = chunk.Usage
		}
		for _, c := range chunk.Choices {
			text += c.Text + c.Delta.Content
			if c.FinishReason != nil {
				finish = *c.FinishReason
			}
		}
	}
	return text, finish, usage
}

// errorOf decodes an error response.
func errorOf(t *testing.T, body []byte) *apiError {
	t.Helper()
	var e errorBody
	if err := json.Unmarshal(body, &e); err != nil || e.Error == nil {
		t.Fatalf("not an error body: %s (%v)", body, err)
	}
	return e.Error
}

// runScheduler runs sched's loop until stop is called or the test ends;
// stop ends it without waiting (an engine blocked on a gate may hold it),
// and the test's cleanup waits for it to return.
func runScheduler(tb testing.TB, sched *decode.Scheduler) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		sched.Run(ctx)
	}()
	tb.Cleanup(func() {
		cancel()
		<-done
	})
	return cancel
}
