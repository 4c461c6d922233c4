package httpapi

import (
	"net/http"
	"strings"
	"testing"
)

func TestErrors(t *testing.T) {
	e := newEnv(t, envOptions{ctx: 32, maxBody: 2048})
	long := `"` + strings.Repeat("a", 40) + `"`
	tests := []struct {
		name, method, path, body string
		status                   int
		typ                      string
		param, code              any
		msg                      []string // substrings of the message
	}{
		{"malformed JSON", "POST", "/v1/completions", `{"prompt": "a",`, 400, "invalid_request_error", nil, nil, []string{"malformed JSON"}},
		{"trailing data", "POST", "/v1/completions", `{"prompt":"a"} {}`, 400, "invalid_request_error", "", nil, nil},
		{"wrong type", "POST", "/v1/completions", `{"prompt":"a","max_tokens":"ten"}`, 400, "invalid_request_error", "max_tokens", nil, []string{"max_tokens", "integer"}},
		{"wrong type nested", "POST", "/v1/chat/completions", `{"messages":[{"role":1}]}`, 400, "invalid_request_error", "messages.role", nil, nil},
		{"prompt longer than context", "POST", "/v1/completions", `{"prompt":` + long + `}`, 400, "invalid_request_error", "prompt", "context_length_exceeded", []string{"41", "32"}},
		{"max_tokens zero", "POST", "/v1/completions", `{"prompt":"a","max_tokens":0}`, 400, "invalid_request_error", "max_tokens", nil, nil},
		{"max_completion_tokens negative", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"a"}],"max_completion_tokens":-1}`, 400, "invalid_request_error", "max_completion_tokens", nil, nil},
		{"body too large", "POST", "/v1/completions", `{"prompt":"` + strings.Repeat("a", 4000) + `"}`, 413, "invalid_request_error", nil, "request_too_large", []string{"2048"}},
		{"unknown model", "POST", "/v1/completions", `{"model":"gpt-9","prompt":"a"}`, 404, "invalid_request_error", "model", "model_not_found", []string{"gpt-9", "fake"}},
		{"n is 0", "POST", "/v1/completions", `{"prompt":"a","n":0}`, 400, "invalid_request_error", "n", nil, nil},
		{"missing prompt", "POST", "/v1/completions", `{}`, 400, "invalid_request_error", "prompt", nil, nil},
		{"bad prompt type", "POST", "/v1/completions", `{"prompt":{"a":1}}`, 400, "invalid_request_error", "prompt", nil, nil},
		{"prompt token outside vocabulary", "POST", "/v1/completions", `{"prompt":[1,999]}`, 400, "invalid_request_error", "prompt[1]", nil, []string{"999"}},
		{"empty prompt", "POST", "/v1/completions", `{"prompt":[]}`, 400, "invalid_request_error", "prompt", nil, nil},
		{"stop wrong type", "POST", "/v1/completions", `{"prompt":"a","stop":5}`, 400, "invalid_request_error", "stop", nil, nil},
		{"temperature out of range", "POST", "/v1/completions", `{"prompt":"a","temperature":-1}`, 400, "invalid_request_error", "temperature", nil, nil},
		{"logit bias key", "POST", "/v1/completions", `{"prompt":"a","logit_bias":{"x":1}}`, 400, "invalid_request_error", "logit_bias", nil, nil},
		{"logit bias outside vocabulary", "POST", "/v1/completions", `{"prompt":"a","logit_bias":{"9999":1}}`, 400, "invalid_request_error", nil, nil, []string{"9999"}},
		{"top_logprobs too many", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"a"}],"logprobs":true,"top_logprobs":50}`, 400, "invalid_request_error", "top_logprobs", nil, nil},
		{"chat logprobs not boolean", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"a"}],"logprobs":3}`, 400, "invalid_request_error", "logprobs", nil, nil},
		{"no messages", "POST", "/v1/chat/completions", `{"messages":[]}`, 400, "invalid_request_error", "messages", nil, nil},
		{"bad role", "POST", "/v1/chat/completions", `{"messages":[{"role":"wizard","content":"a"}]}`, 400, "invalid_request_error", "messages[0].role", nil, []string{"wizard"}},
		{"image content", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, 400, "invalid_request_error", "messages[0].content[0].type", nil, nil},
		{"detokenize outside vocabulary", "POST", "/detokenize", `{"tokens":[5000]}`, 400, "invalid_request_error", "tokens", nil, nil},
		{"tokenize without content", "POST", "/tokenize", `{}`, 400, "invalid_request_error", "content", nil, nil},
		{"unknown route", "GET", "/v2/nothing", "", 404, "invalid_request_error", nil, nil, nil},
		{"wrong method", "GET", "/v1/completions", "", 405, "invalid_request_error", nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := e.do(t, tt.method, tt.path, tt.body)
			if code != tt.status {
				t.Fatalf("status %d, want %d: %s", code, tt.status, body)
			}
			got := errorOf(t, body)
			if got.Type != tt.typ || (tt.param != nil && got.Param != tt.param) || got.Code != tt.code {
				t.Errorf("error %+v, want type %q param %v code %v", got, tt.typ, tt.param, tt.code)
			}
			for _, m := range tt.msg {
				if !strings.Contains(got.Message, m) {
					t.Errorf("message %q lacks %q", got.Message, m)
				}
			}
		})
	}
}

func TestQueueFull(t *testing.T) {
	e := newEnv(t, envOptions{slots: 1, queue: 1, gated: true})
	// Two requests fill the slot and the queue; their bodies stay open.
	for range 2 {
		resp := e.send(t, t.Context(), "POST", "/v1/completions", `{"prompt":"a","max_tokens":2,"stream":true}`)
		defer resp.Body.Close()
	}
	code, body := e.do(t, "POST", "/v1/completions", `{"prompt":"a","max_tokens":2}`)
	if code != http.StatusTooManyRequests {
		t.Fatalf("status %d, want 429: %s", code, body)
	}
	if got := errorOf(t, body); got.Type != "rate_limit_error" || got.Code != "queue_full" {
		t.Errorf("error %+v", got)
	}
}

func TestAuth(t *testing.T) {
	on := newEnv(t, envOptions{key: "sekret"})
	off := newEnv(t, envOptions{})
	tests := []struct {
		name   string
		env    *testEnv
		header string
		path   string
		want   int
	}{
		{"key on, none sent", on, "", "/v1/models", 401},
		{"key on, wrong key", on, "Bearer nope", "/v1/models", 401},
		{"key on, not Bearer", on, "sekret", "/v1/models", 401},
		{"key on, right key", on, "Bearer sekret", "/v1/models", 200},
		{"key on, metrics without key", on, "", "/metrics", 401},
		{"key on, metrics with key", on, "Bearer sekret", "/metrics", 200},
		{"key on, health open", on, "", "/health", 200},
		{"key off, none sent", off, "", "/v1/models", 200},
		{"key off, metrics", off, "", "/metrics", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", tt.env.srv.URL+tt.path, nil)
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			resp, err := tt.env.srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
	// A completion through the key, and the 401 body.
	code, body := on.do(t, "POST", "/v1/completions", `{"prompt":"a","max_tokens":1}`)
	if code != 200 {
		t.Errorf("completion with key: %d %s", code, body)
	}
	on.key = ""
	code, body = on.do(t, "POST", "/v1/completions", `{"prompt":"a","max_tokens":1}`)
	if got := errorOf(t, body); code != 401 || got.Code != "invalid_api_key" {
		t.Errorf("completion without key: %d %+v", code, got)
	}
}

func TestCORS(t *testing.T) {
	e := newEnv(t, envOptions{cors: []string{"https://app.example"}, key: "k"})
	pre := func(origin string) *http.Response {
		req, _ := http.NewRequest("OPTIONS", e.srv.URL+"/v1/chat/completions", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	resp := pre("https://app.example")
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("allowed preflight: %d %v", resp.StatusCode, resp.Header)
	}
	if resp := pre("https://evil.example"); resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("disallowed origin got CORS headers: %v", resp.Header)
	}
	noCORS := newEnv(t, envOptions{})
	req, _ := http.NewRequest("GET", noCORS.srv.URL+"/v1/models", nil)
	req.Header.Set("Origin", "https://app.example")
	r, err := noCORS.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("CORS headers without configured origins")
	}
}
