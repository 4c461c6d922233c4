package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzRequestDecode sends arbitrary bodies to every route that reads one:
// each answer is a 2xx or a 4xx, never a 5xx, and an error is OpenAI-style
// JSON.
func FuzzRequestDecode(f *testing.F) {
	e := newEnv(f, envOptions{})
	paths := []string{"/v1/completions", "/v1/chat/completions", "/tokenize", "/detokenize"}
	for _, s := range []string{
		`{"prompt":"once","max_tokens":3}`,
		`{"prompt":[1,2,3],"max_tokens":2,"n":2,"logprobs":2}`,
		`{"prompt":["a","b"],"stream":true,"max_tokens":2,"stop":["x"],"logit_bias":{"3":-100}}`,
		`{"messages":[{"role":"user","content":"hi"}],"max_tokens":2,"logprobs":true,"top_logprobs":2}`,
		`{"messages":[{"role":"system","content":[{"type":"text","text":"a"}]},{"role":"user","content":"b"}],"stream":true,"max_tokens":2}`,
		`{"prompt":"a","mirostat":2,"dry_multiplier":0.8,"samplers":"kt","max_tokens":2}`,
		`{"content":"hello","with_pieces":true}`,
		`{"tokens":[1,2,3]}`,
		`{"prompt":"a","repeat_last_n":-1,"repeat_penalty":1.1,"seed":-1,"top_p":0}`,
	} {
		for i := range paths {
			f.Add(uint8(i), []byte(s))
		}
	}
	h := e.api.Handler()
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		path := paths[int(route)%len(paths)]
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("POST %s %q: status %d: %s", path, body, rec.Code, rec.Body.Bytes())
		}
		if rec.Code >= 400 {
			var eb errorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &eb); err != nil || eb.Error == nil || eb.Error.Message == "" {
				t.Fatalf("POST %s %q: status %d with a body that is not an error object: %s", path, body, rec.Code, rec.Body.Bytes())
			}
			return
		}
		ct := rec.Header().Get("Content-Type")
		if !strings.HasPrefix(ct, "application/json") && !strings.HasPrefix(ct, "text/event-stream") {
			t.Fatalf("POST %s %q: status %d with Content-Type %q", path, body, rec.Code, ct)
		}
	})
}
