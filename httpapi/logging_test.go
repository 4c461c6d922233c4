package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/google/uuid"

	"llmserve/internal/servertest"
)

// logLines returns the lines logged so far.
func logLines(log *servertest.Log) []string {
	return strings.Split(strings.TrimSpace(log.String()), "\n")
}

// TestRequestLog checks the one JSON line logged per request.
func TestRequestLog(t *testing.T) {
	var log servertest.Log
	e := newEnv(t, envOptions{log: &log})
	resp := e.send(t, context.Background(), "POST", "/v1/completions",
		`{"prompt":"abc","max_tokens":6,"ignore_eos":true,"stream":true}`)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	e.do(t, "POST", "/v1/completions", `{"prompt":"abc","max_tokens":0}`)

	lines := logLines(&log)
	if len(lines) != 2 {
		t.Fatalf("%d log lines, want 2:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	var ok, bad map[string]any
	if json.Unmarshal([]byte(lines[0]), &ok) != nil || json.Unmarshal([]byte(lines[1]), &bad) != nil {
		t.Fatalf("log lines are not JSON:\n%s", strings.Join(lines, "\n"))
	}
	id, _ := ok["id"].(string)
	if _, err := uuid.Parse(id); err != nil || resp.Header.Get("X-Request-Id") != id || !strings.Contains(string(body), `"id":"cmpl-`+id+`"`) {
		t.Errorf("request id %q: header %q, not the completion id in the body", id, resp.Header.Get("X-Request-Id"))
	}
	if ok["status"] != 200.0 || ok["path"] != "/v1/completions" || ok["prompt_tokens"] != 4.0 || ok["completion_tokens"] != 6.0 {
		t.Errorf("log line %s", lines[0])
	}
	for _, k := range []string{"ttft_ms", "tokens_per_s", "duration_ms"} {
		if v, isNum := ok[k].(float64); !isNum || v <= 0 {
			t.Errorf("log line lacks a positive %s: %s", k, lines[0])
		}
	}
	if bad["status"] != 400.0 || !strings.Contains(bad["error"].(string), "max_tokens") {
		t.Errorf("error log line %s", lines[1])
	}
}
