package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeOpenAI is an OpenAI-style server for bench-serve's tests: it streams
// max_tokens one-word chunks, and fails requests as fail picks.
type fakeOpenAI struct {
	key   string               // required bearer token; "": none
	delay time.Duration        // between chunks
	fail  func(n int64) string // the failure of the n-th request (from 1): "", "500", "cut" or "event"
	n     atomic.Int64         // generation requests seen
	// A request with response_format gets the text of a JSON array of
	// max_tokens numbers, cut short of its "]" when badJSON is set.
	badJSON     bool
	constrained atomic.Int64    // requests with response_format seen
	schemaEOS   atomic.Int64    // of them, those that also asked for ignore_eos
	schemaOK    atomic.Int64    // of them, those whose schema is the one sent
	wantSchema  string          // the schema those requests must carry (compact, keys sorted)
	mu          sync.Mutex      // guards the fields below
	paths       map[string]int  // requests by path
	body        map[string]any  // the last generation request's body
	seen        map[string]bool // prompts seen, to count distinct ones
}

func newFakeOpenAI() *fakeOpenAI {
	return &fakeOpenAI{paths: map[string]int{}, seen: map[string]bool{}}
}

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.paths[r.URL.Path]++
	f.mu.Unlock()
	if f.key != "" && r.Header.Get("Authorization") != "Bearer "+f.key {
		http.Error(w, `{"error":{"message":"bad key"}}`, http.StatusUnauthorized)
		return
	}
	var body map[string]any
	if r.Method == http.MethodPost {
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	switch r.URL.Path {
	case "/v1/models":
		fmt.Fprint(w, `{"object":"list","data":[{"id":"fake-model"}]}`)
	case "/tokenize":
		// Two tokens per word.
		n := 2 * len(strings.Fields(body["content"].(string)))
		json.NewEncoder(w).Encode(map[string]any{"tokens": make([]int, n)})
	case "/v1/completions", "/v1/chat/completions":
		f.generate(w, r, body)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeOpenAI) generate(w http.ResponseWriter, r *http.Request, body map[string]any) {
	n := f.n.Add(1)
	prompt, _ := body["prompt"].(string)
	if msgs, ok := body["messages"].([]any); ok && len(msgs) > 0 {
		prompt, _ = msgs[0].(map[string]any)["content"].(string)
	}
	f.mu.Lock()
	f.body = body
	f.seen[prompt] = true
	f.mu.Unlock()
	mode := ""
	if f.fail != nil {
		mode = f.fail(n)
	}
	if mode == "500" {
		http.Error(w, `{"error":{"message":"boom"}}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	maxTokens := int(body["max_tokens"].(float64))
	chat := r.URL.Path == "/v1/chat/completions"
	if rf, ok := body["response_format"].(map[string]any); ok {
		f.constrained.Add(1)
		if body["ignore_eos"] != nil {
			f.schemaEOS.Add(1)
		}
		js, _ := rf["json_schema"].(map[string]any)
		if got, _ := json.Marshal(js["schema"]); rf["type"] == "json_schema" && string(got) == f.wantSchema {
			f.schemaOK.Add(1)
		}
		f.streamJSON(w, chat, maxTokens)
		return
	}
	for i := range maxTokens {
		if mode == "cut" && i == maxTokens/2 {
			return // the handler returns without [DONE]
		}
		if mode == "event" && i == 1 {
			fmt.Fprint(w, "data: {\"error\":{\"message\":\"ended\"}}\n\n")
			break
		}
		if chat {
			fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":\" w%d\"}}]}\n\n", i)
		} else {
			fmt.Fprintf(w, "data: {\"choices\":[{\"text\":\" w%d\"}]}\n\n", i)
		}
		fl.Flush()
		time.Sleep(f.delay)
	}
	fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d}}\n\n", 2*len(strings.Fields(prompt)), maxTokens)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// streamJSON streams max_tokens pieces of "[0,0,...,0]" and a final
// chunk with finish_reason "stop".
func (f *fakeOpenAI) streamJSON(w http.ResponseWriter, chat bool, maxTokens int) {
	for i := range maxTokens {
		piece := "0,"
		if i == 0 {
			piece = "[" + piece
		}
		if i == maxTokens-1 && !f.badJSON {
			piece = "0]"
		}
		if chat {
			fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":%q}}]}\n\n", piece)
		} else {
			fmt.Fprintf(w, "data: {\"choices\":[{\"text\":%q}]}\n\n", piece)
		}
	}
	fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"\",\"finish_reason\":\"stop\"}]}\n\n")
	fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":%d}}\n\n", maxTokens)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// benchOpts are small valid options against url.
func benchOpts(url string) benchServeOptions {
	return benchServeOptions{url: url, endpoint: "completions", clients: 4, requests: 3, promptTokens: 40,
		maxTokens: 5, temperature: -1, duration: time.Minute, timeout: 10 * time.Second, seed: 1}
}

func runBench(t *testing.T, o benchServeOptions) *benchReport {
	t.Helper()
	if err := o.check(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.duration)
	defer cancel()
	rep, err := benchServe(ctx, &o, newBenchClient(o.clients), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestBenchServeCounts(t *testing.T) {
	tests := []struct {
		name     string
		endpoint string
		fail     func(n int64) string
		ok       int
		errors   map[string]int
	}{
		{"all ok", "completions", nil, 12, map[string]int{}},
		{"chat", "chat", nil, 12, map[string]int{}},
		{"failures by kind", "completions", func(n int64) string {
			return map[int64]string{2: "500", 5: "cut", 7: "event", 9: "500"}[n]
		}, 8, map[string]int{"http_500": 2, errStream: 1, errEvent: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeOpenAI()
			f.fail = tt.fail
			srv := httptest.NewServer(f)
			defer srv.Close()
			o := benchOpts(srv.URL)
			o.endpoint = tt.endpoint
			rep := runBench(t, o)
			if rep.Sent != 12 || rep.OK != tt.ok || rep.NotSent != 0 {
				t.Errorf("sent %d, ok %d, not sent %d; want 12, %d, 0", rep.Sent, rep.OK, rep.NotSent, tt.ok)
			}
			if fmt.Sprint(rep.Errors) != fmt.Sprint(tt.errors) {
				t.Errorf("errors %v, want %v (examples %v)", rep.Errors, tt.errors, rep.ErrorExamples)
			}
			if rep.GeneratedTokens != 5*tt.ok || rep.TTFT.N != tt.ok || rep.ITL.N != 4*tt.ok {
				t.Errorf("generated %d, ttft n %d, gaps n %d; want %d, %d, %d", rep.GeneratedTokens, rep.TTFT.N, rep.ITL.N, 5*tt.ok, tt.ok, 4*tt.ok)
			}
			if rep.Model != "fake-model" || !rep.TokensMeasured || rep.TokensPerWord != 2 {
				t.Errorf("model %q, tokens per word %v (measured %v)", rep.Model, rep.TokensPerWord, rep.TokensMeasured)
			}
			// 40 tokens at 2 per word: 20 words, 40 prompt tokens.
			if rep.MeanPromptTokens != 40 {
				t.Errorf("mean prompt tokens %v, want 40", rep.MeanPromptTokens)
			}
			if len(f.seen) != 12 {
				t.Errorf("%d distinct prompts, want 12", len(f.seen))
			}
			for _, s := range []latencyStats{rep.TTFT, rep.ITL, rep.Latency} {
				if s.N > 0 && !(s.P50 <= s.P90 && s.P90 <= s.P99 && s.P99 <= s.Max) {
					t.Errorf("percentiles out of order: %+v", s)
				}
			}
		})
	}
}

func TestBenchServeRequestBody(t *testing.T) {
	f := newFakeOpenAI()
	f.key = "k-123"
	srv := httptest.NewServer(f)
	defer srv.Close()
	o := benchOpts(srv.URL)
	o.clients, o.requests, o.apiKey, o.ignoreEOS, o.temperature, o.model = 1, 1, "k-123", true, 0, "named"
	rep := runBench(t, o)
	if rep.OK != 1 {
		t.Fatalf("%d ok: %v", rep.OK, rep.ErrorExamples)
	}
	if f.paths["/v1/models"] != 0 {
		t.Errorf("asked /v1/models though --model was given")
	}
	b := f.body
	so, _ := b["stream_options"].(map[string]any)
	if b["model"] != "named" || b["stream"] != true || b["ignore_eos"] != true || b["temperature"] != 0.0 || b["max_tokens"] != 5.0 || so["include_usage"] != true {
		t.Errorf("request body %v", b)
	}
}

func TestBenchServeSharedPrefix(t *testing.T) {
	f := newFakeOpenAI()
	srv := httptest.NewServer(f)
	defer srv.Close()
	o := benchOpts(srv.URL)
	o.prefixTokens = 20
	runBench(t, o)
	var first []string
	for p := range f.seen {
		w := strings.Fields(p)
		if len(w) != 20 {
			t.Errorf("prompt of %d words, want 20: %q", len(w), p)
		}
		if first == nil {
			first = w[:10]
		} else if strings.Join(w[:10], " ") != strings.Join(first, " ") {
			t.Errorf("prompts do not share their first 10 words (20 tokens)")
		}
	}
	if len(f.seen) != 12 {
		t.Errorf("%d distinct prompts, want 12", len(f.seen))
	}
}

func TestBenchServeDurationCap(t *testing.T) {
	f := newFakeOpenAI()
	f.delay = 20 * time.Millisecond
	srv := httptest.NewServer(f)
	defer srv.Close()
	o := benchOpts(srv.URL)
	o.clients, o.requests, o.maxTokens, o.duration = 2, 50, 10, 300*time.Millisecond
	rep := runBench(t, o)
	if !rep.DurationCapped || rep.NotSent == 0 || rep.Sent+rep.NotSent != 100 {
		t.Errorf("capped %v: %d sent, %d not sent", rep.DurationCapped, rep.Sent, rep.NotSent)
	}
	if rep.Seconds > 5 {
		t.Errorf("the run took %.1f s past a 0.3 s cap", rep.Seconds)
	}
}

func TestBenchServeNoTokenize(t *testing.T) {
	f := newFakeOpenAI()
	mux := http.NewServeMux()
	mux.HandleFunc("/tokenize", http.NotFound)
	mux.Handle("/", f)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	rep := runBench(t, benchOpts(srv.URL))
	if rep.TokensMeasured || rep.TokensPerWord != defaultTokensPerWord || rep.OK != 12 {
		t.Errorf("without /tokenize: measured %v, ratio %v, ok %d", rep.TokensMeasured, rep.TokensPerWord, rep.OK)
	}
}

func TestBenchServeConnectErrors(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	o := benchOpts(url)
	o.model = "m"
	rep := runBench(t, o)
	if rep.OK != 0 || rep.Errors[errConnect] != 12 {
		t.Errorf("against a closed port: ok %d, errors %v", rep.OK, rep.Errors)
	}
}

func TestBenchServeReport(t *testing.T) {
	f := newFakeOpenAI()
	srv := httptest.NewServer(f)
	defer srv.Close()
	rep := runBench(t, benchOpts(srv.URL))
	var js bytes.Buffer
	if err := rep.writeJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back benchReport
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.OK != rep.OK || back.TTFT != rep.TTFT {
		t.Errorf("JSON round trip: %v, %+v", err, back)
	}
	var text strings.Builder
	rep.writeText(&text)
	for _, want := range []string{"12 ok", "time to 1st token", "inter-token gap", "tokens/s"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
}

func TestBenchServeOptionsChecked(t *testing.T) {
	tests := []struct {
		name string
		edit func(o *benchServeOptions)
	}{
		{"no scheme", func(o *benchServeOptions) { o.url = "127.0.0.1:8080" }},
		{"bad endpoint", func(o *benchServeOptions) { o.endpoint = "embeddings" }},
		{"too many clients", func(o *benchServeOptions) { o.clients = benchMaxClients + 1 }},
		{"too many requests", func(o *benchServeOptions) { o.clients, o.requests = 1000, 1000 }},
		{"prefix as long as the prompt", func(o *benchServeOptions) { o.prefixTokens = o.promptTokens }},
		{"no max tokens", func(o *benchServeOptions) { o.maxTokens = 0 }},
		{"no duration cap", func(o *benchServeOptions) { o.duration = 0 }},
		{"cap too long", func(o *benchServeOptions) { o.duration = 2 * time.Hour }},
	}
	for _, tt := range tests {
		o := benchOpts("http://127.0.0.1:1")
		tt.edit(&o)
		if err := o.check(); err == nil {
			t.Errorf("%s: accepted", tt.name)
		}
	}
	o := benchOpts("http://127.0.0.1:1")
	if err := o.check(); err != nil {
		t.Errorf("valid options refused: %v", err)
	}
}

func TestLatencyStats(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	s := newLatencyStats(ds)
	if s.N != 100 || s.P50 != 50 || s.P90 != 90 || s.P99 != 99 || s.Max != 100 || s.Mean != 50.5 {
		t.Errorf("stats of 1..100 ms: %+v", s)
	}
	if s := newLatencyStats(nil); s.N != 0 {
		t.Errorf("stats of nothing: %+v", s)
	}
}

// TestBenchServeSchema checks that the share of clients given by
// --constrained-share sends the schema as response_format (without
// ignore_eos), and that the report splits tokens by group and counts the
// answers that parse.
func TestBenchServeSchema(t *testing.T) {
	schema := `{"type":"array","items":{"type":"integer"}}`
	path := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(path, []byte(" "+schema+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		endpoint    string
		share       float64
		badJSON     bool
		constrained int // clients
	}{
		{"half", "completions", 0.5, false, 2},
		{"chat, a quarter", "chat", 0.25, false, 1},
		{"all, bad JSON", "completions", 1, true, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeOpenAI()
			var v any
			if err := json.Unmarshal([]byte(schema), &v); err != nil {
				t.Fatal(err)
			}
			canon, _ := json.Marshal(v) // keys sorted, as the fake re-encodes what it got
			f.wantSchema, f.badJSON = string(canon), tt.badJSON
			srv := httptest.NewServer(f)
			defer srv.Close()
			o := benchOpts(srv.URL)
			o.endpoint, o.schemaPath, o.share, o.ignoreEOS = tt.endpoint, path, tt.share, true
			rep := runBench(t, o)
			reqs := tt.constrained * o.requests
			if got := f.constrained.Load(); got != int64(reqs) || f.schemaOK.Load() != got || f.schemaEOS.Load() != 0 {
				t.Errorf("%d requests with response_format, %d with the schema, %d with ignore_eos; want %d, all, none",
					got, f.schemaOK.Load(), f.schemaEOS.Load(), reqs)
			}
			if len(rep.Groups) != 2 {
				t.Fatalf("groups %+v", rep.Groups)
			}
			c, u := rep.Groups[0], rep.Groups[1]
			if c.Clients != tt.constrained || u.Clients != o.clients-tt.constrained || c.OK != reqs || u.OK != (o.clients-tt.constrained)*o.requests {
				t.Errorf("groups %+v", rep.Groups)
			}
			if c.GeneratedTokens != reqs*o.maxTokens || c.GeneratedTokens+u.GeneratedTokens != rep.GeneratedTokens {
				t.Errorf("group tokens %d + %d, all %d", c.GeneratedTokens, u.GeneratedTokens, rep.GeneratedTokens)
			}
			wantParsed, wantInvalid := reqs, 0
			if tt.badJSON {
				wantParsed, wantInvalid = 0, reqs
			}
			if c.ParsedJSON != wantParsed || c.InvalidJSON != wantInvalid || c.Truncated != 0 || u.ParsedJSON+u.InvalidJSON != 0 {
				t.Errorf("parsed %d, invalid %d, truncated %d; want %d, %d, 0", c.ParsedJSON, c.InvalidJSON, c.Truncated, wantParsed, wantInvalid)
			}
			var text bytes.Buffer
			rep.writeText(&text)
			for _, want := range []string{"constrained       ", "unconstrained     ", "parse as JSON"} {
				if !strings.Contains(text.String(), want) {
					t.Errorf("text report lacks %q:\n%s", want, text.String())
				}
			}
		})
	}
}

// TestBenchServeSchemaChecked checks that bad schema files and shares are
// refused before any request.
func TestBenchServeSchemaChecked(t *testing.T) {
	dir := t.TempDir()
	notObject := filepath.Join(dir, "a.json")
	if err := os.WriteFile(notObject, []byte(`[1]`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		path  string
		share float64
	}{
		{"missing", filepath.Join(dir, "none.json"), 0.5},
		{"not an object", notObject, 0.5},
		{"share above 1", "", 1.5},
		{"negative share", "", -0.1},
	} {
		o := benchOpts("http://127.0.0.1:1")
		o.schemaPath, o.share = tt.path, tt.share
		if err := o.check(); err == nil {
			t.Errorf("%s: accepted", tt.name)
		}
	}
}
