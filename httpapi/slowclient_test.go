package httpapi

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestSlowBodyTimesOut sends headers and half a body, then stalls: the
// server must answer 408 once the body timeout passes.
func TestSlowBodyTimesOut(t *testing.T) {
	env := newEnv(t, envOptions{bodyTimeout: 200 * time.Millisecond})
	conn, err := net.Dial("tcp", strings.TrimPrefix(env.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"prompt":"hello","max_tokens":4}`
	fmt.Fprintf(conn, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:10])
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no response to a stalled body: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("status %d, want 408", resp.StatusCode)
	}
}

// TestStreamOutlivesBodyTimeout checks that the body timeout bounds only
// the request: a stream that lasts longer than it runs to its end.
func TestStreamOutlivesBodyTimeout(t *testing.T) {
	env := newEnv(t, envOptions{bodyTimeout: 100 * time.Millisecond, stepDelay: 10 * time.Millisecond})
	resp, err := http.Post(env.srv.URL+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt":"hello","max_tokens":40,"stream":true,"temperature":0}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var chunks int
	sc := bufio.NewScanner(resp.Body)
	last := ""
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "data: ") {
			chunks++
			last = line
		}
	}
	if last != "data: [DONE]" || chunks < 40 {
		t.Errorf("stream ended after %d chunks with %q; want 40 tokens and [DONE]", chunks, last)
	}
}
