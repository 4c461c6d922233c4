package httpapi

import (
	"encoding/json"
	"testing"

	"llmserve/model/chat"
)

// TestHostileTemplates checks that a chat template that rejects the
// conversation is the client's 400, that one breaking a bound (endless
// recursion, a huge range, a huge output) is a 500 JSON error for that
// request alone, and that the server serves the next request.
func TestHostileTemplates(t *testing.T) {
	tests := []struct {
		name, src string
		status    int
		code      string
	}{
		{"raise_exception", `{{ raise_exception('roles must alternate') }}`, 400, "chat_template_rejected"},
		{"recursion", `{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}`, 500, "chat_template_error"},
		{"huge range", `{% for i in range(100000000) %}x{% endfor %}`, 500, "chat_template_error"},
		{"huge output", `{% for m in messages %}{{ m.content * 100000000 }}{% endfor %}`, 500, "chat_template_error"},
		{"renders", `{% for m in messages %}{{ m.content }}{% endfor %}`, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, envOptions{})
			m, err := e.api.loaded()
			if err != nil {
				t.Fatal(err)
			}
			tmpl, err := chat.New(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			e.api.SetModel(&Model{Name: m.Name, Scheduler: m.Scheduler, Tokenizer: m.Tokenizer, Chat: renderer(t, tmpl), Created: m.Created})
			body := `{"messages":[{"role":"user","content":"ab"}],"max_tokens":2}`
			code, resp := e.do(t, "POST", "/v1/chat/completions", body)
			if code != tt.status {
				t.Fatalf("status %d, want %d: %s", code, tt.status, resp)
			}
			if tt.code != "" {
				var eb struct {
					Error struct{ Code, Message string }
				}
				if err := json.Unmarshal(resp, &eb); err != nil || eb.Error.Code != tt.code {
					t.Errorf("body %s (%v), want code %s", resp, err, tt.code)
				}
			}
			// The server goes on: the same template again, then a completion.
			if code, _ := e.do(t, "POST", "/v1/chat/completions", body); code != tt.status {
				t.Errorf("second request: status %d, want %d", code, tt.status)
			}
			if code, resp := e.do(t, "POST", "/v1/completions", `{"prompt":"ab","max_tokens":2}`); code != 200 {
				t.Errorf("completion after it: %d %s", code, resp)
			}
		})
	}
}
