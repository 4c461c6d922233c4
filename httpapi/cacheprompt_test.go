package httpapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"llmserve/decode"
	"llmserve/gguf"
	"llmserve/internal/shared"
	"llmserve/model"
	"llmserve/model/chat"
	"llmserve/model/tokenizer"
)

// TestCachePrompt sends one long prompt three times to stories260K on the
// CPU engine: the second time it comes from the prefix cache, the third
// time, with "cache_prompt": false, not; the text is the same each time
// and /metrics counts the cached prompt tokens.
func TestCachePrompt(t *testing.T) {
	f, err := gguf.Open(shared.Path(t, "models/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	m, err := model.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := decode.NewCPUEngine(m, decode.CPUOptions{Context: 256, MaxSeqs: 2, Threads: 2, BlockSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	sched, err := decode.NewScheduler(eng, tokVocab{tok}, decode.SchedulerConfig{MaxQueue: 4})
	if err != nil {
		t.Fatal(err)
	}
	runScheduler(t, sched)
	tmpl, err := chat.Fallback("chatml")
	if err != nil {
		t.Fatal(err)
	}
	api := New(Config{ModelName: "stories", Logger: zerolog.Nop()})
	api.SetModel(&Model{Name: "stories", Scheduler: sched, Tokenizer: tok, Chat: renderer(t, tmpl), Created: time.Now()})
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	env := &testEnv{srv: srv, api: api, sched: sched}

	const prompt = "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends. One day, she saw a big red ball"
	complete := func(extra string) (string, uint64) {
		before := sched.Metrics().Snapshot().CachedPrompt
		var resp struct {
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
		}
		env.post(t, "/v1/completions", `{"prompt":"`+prompt+`","max_tokens":24,"temperature":0`+extra+`}`, &resp)
		if len(resp.Choices) != 1 {
			t.Fatalf("%d choices", len(resp.Choices))
		}
		return resp.Choices[0].Text, sched.Metrics().Snapshot().CachedPrompt - before
	}
	first, cached0 := complete("")
	tests := []struct {
		name   string
		extra  string
		reused bool
	}{
		{"again", "", true},
		{"cache_prompt true", `,"cache_prompt":true`, true},
		{"cache_prompt false", `,"cache_prompt":false`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, cached := complete(tt.extra)
			if text != first {
				t.Errorf("text %q, the first time %q", text, first)
			}
			if (cached > 0) != tt.reused {
				t.Errorf("%d prompt tokens from the cache (the first time %d)", cached, cached0)
			}
		})
	}
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), "llmserve_prompt_tokens_cached_total ") || !strings.Contains(string(body), "llmserve_kv_bytes_per_token ") {
		t.Errorf("/metrics lacks the KV cache's figures:\n%s", body)
	}
}
