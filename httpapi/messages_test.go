package httpapi

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestErrorMessagesReadOnce checks two error messages a client reads: a
// grammar error names the field once (not "grammar: grammar: ..."), and a
// 404 for a very long path does not echo all of it.
func TestErrorMessagesReadOnce(t *testing.T) {
	e := newEnv(t, envOptions{})
	message := func(method, path, body string, status int) string {
		t.Helper()
		code, b := e.do(t, method, path, body)
		if code != status {
			t.Fatalf("%s %s: status %d, want %d: %s", method, path[:min(len(path), 40)], code, status, b)
		}
		var eb errorBody
		if err := json.Unmarshal(b, &eb); err != nil || eb.Error == nil {
			t.Fatalf("%s: not an error object: %s", path[:min(len(path), 40)], b)
		}
		return eb.Error.Message
	}
	msg := message("POST", "/v1/completions", `{"prompt":"a","grammar":"root ::= foo"}`, 400)
	if !strings.HasPrefix(msg, "grammar: line 1, column") || strings.Count(msg, "grammar:") != 1 {
		t.Errorf("grammar error %q: want the field named once, then the position", msg)
	}
	long := "/" + strings.Repeat("x", 9000)
	if msg := message("GET", long, "", 404); len(msg) > 300 || !strings.HasSuffix(msg, "…") {
		t.Errorf("404 message of %d bytes (%q...): want it clipped", len(msg), msg[:min(len(msg), 60)])
	}
}
