package httpapi

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// serveFull serves e's API the way the binary does (HTTPServer on
// Listener) and returns its address.
func serveFull(t *testing.T, e *testEnv) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := e.api.HTTPServer()
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(e.api.Listener(ln))
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	return ln.Addr().String()
}

// rawResponse is what a raw request got back.
type rawResponse struct {
	status int
	header http.Header
	body   []byte
	closed bool // the server closed the connection after the response
}

// rawRequest writes req on a new connection to addr and reads one
// response, then waits up to wait for the server to close.
func rawRequest(t *testing.T, addr, req string, wait time.Duration) rawResponse {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatalf("write: %v", err)
	}
	return readRaw(t, conn, wait)
}

func readRaw(t *testing.T, conn net.Conn, wait time.Duration) rawResponse {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no response: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("reading the response body: %v", err)
	}
	out := rawResponse{status: resp.StatusCode, header: resp.Header, body: body}
	if wait > 0 {
		conn.SetReadDeadline(time.Now().Add(wait))
		_, err := br.ReadByte()
		out.closed = err != nil && !isTimeout(err)
	}
	return out
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// checkJSONError fails unless r is an OpenAI-style error with every field.
func checkJSONError(t *testing.T, r rawResponse) *apiError {
	t.Helper()
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("status %d with Content-Type %q: %q", r.status, ct, r.body)
	}
	var raw struct {
		Error map[string]json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(r.body, &raw); err != nil || raw.Error == nil {
		t.Fatalf("status %d: not an error body: %q (%v)", r.status, r.body, err)
	}
	for _, k := range []string{"message", "type", "param", "code"} {
		if _, ok := raw.Error[k]; !ok {
			t.Errorf("error lacks %q: %s", k, r.body)
		}
	}
	var e errorBody
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatal(err)
	}
	return e.Error
}
