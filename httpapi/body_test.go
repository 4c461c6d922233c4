package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"llmserve/internal/servertest"
)

// TestUnreadSlowBodyCloses sends a body byte by byte to routes that answer
// without reading it: each must answer, then close the connection within
// a bounded time instead of waiting for the rest.
func TestUnreadSlowBodyCloses(t *testing.T) {
	e := newEnv(t, envOptions{key: "k", bodyTimeout: 20 * time.Second})
	addr := serveFull(t, e)
	tests := []struct {
		name, head string
		status     int
	}{
		{"wrong key", "POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nope\r\n", 401},
		{"no route", "POST /nowhere HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\n", 404},
		{"wrong method", "PUT /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\n", 405},
		{"chunked to no route", "POST /nowhere HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\nTransfer-Encoding: chunked\r\n", 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			head := tt.head
			if !strings.Contains(head, "chunked") {
				head += "Content-Length: 100000\r\n"
			}
			io.WriteString(conn, head+"\r\n")
			stop := servertest.Trickle(conn, []byte("a"), 50*time.Millisecond)
			defer stop()
			start := time.Now()
			r := readRaw(t, conn, 5*time.Second)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d: %q", r.status, tt.status, r.body)
			}
			checkJSONError(t, r)
			if !r.closed {
				t.Errorf("connection still open %v after the answer, with the body unread", time.Since(start))
			}
		})
	}
	waitOpenConns(t, e, 0)
}

// TestManySlowBodiesDoNotPile opens many connections that trickle bodies
// to a route that never reads them: all are answered and closed, and the
// open-connection gauge returns to zero.
func TestManySlowBodiesDoNotPile(t *testing.T) {
	e := newEnv(t, envOptions{bodyTimeout: 20 * time.Second})
	addr := serveFull(t, e)
	const n = 100
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close()
			fmt.Fprintf(conn, "POST /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n")
			stop := servertest.Trickle(conn, []byte("a"), 100*time.Millisecond)
			defer stop()
			conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			b, err := io.ReadAll(conn) // ends when the server closes
			if err != nil && !errors.Is(err, syscall.ECONNRESET) {
				errs <- fmt.Errorf("connection not closed: %v after %q", err, b)
				return
			}
			if !strings.HasPrefix(string(b), "HTTP/1.1 404 ") {
				errs <- fmt.Errorf("answer %q", b)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	waitOpenConns(t, e, 0)
}

// waitOpenConns waits for the open-connection gauge to fall to want.
func waitOpenConns(t *testing.T, e *testEnv, want int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for e.api.conns.Load() > want {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still open, want %d", e.api.conns.Load(), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestBodyErrors checks the answers to bodies that are empty, broken on
// the wire, declared too large or not UTF-8.
func TestBodyErrors(t *testing.T) {
	e := newEnv(t, envOptions{maxBody: 4096})
	addr := serveFull(t, e)
	post := func(path, headers, body string) string {
		return "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + headers + "\r\n" + body
	}
	cl := func(body string) string { return fmt.Sprintf("Content-Length: %d\r\n", len(body)) }
	tests := []struct {
		name, req string
		status    int
		code      string
	}{
		{"empty body", post("/v1/completions", "Content-Length: 0\r\n", ""), 400, "empty_body"},
		{"blank body", post("/v1/completions", cl(" \n\t "), " \n\t "), 400, "empty_body"},
		{"empty chunked body", post("/tokenize", "Transfer-Encoding: chunked\r\n", "0\r\n\r\n"), 400, "empty_body"},
		{"bad chunk size", post("/v1/completions", "Transfer-Encoding: chunked\r\n", "zz\r\n{}\r\n0\r\n\r\n"), 400, "bad_request_body"},
		{"chunk size overflow", post("/tokenize", "Transfer-Encoding: chunked\r\n", "fffffffffffffffffff\r\n{}\r\n0\r\n\r\n"), 400, "bad_request_body"},
		{"chunk without CRLF", post("/tokenize", "Transfer-Encoding: chunked\r\n", "4\r\n{\"coZZ\r\n0\r\n\r\n"), 400, "bad_request_body"},
		{"broken after a whole value", post("/tokenize", "Transfer-Encoding: chunked\r\n", "f\r\n{\"content\":\"a\"}XX0\r\n\r\n"), 400, "bad_request_body"},
		{"bad trailer after a whole value", post("/tokenize", "Transfer-Encoding: chunked\r\n", "f\r\n{\"content\":\"a\"}\r\n0\r\nno colon\r\n\r\n"), 400, "bad_request_body"},
		{"declared too large", post("/v1/completions", "Content-Length: 1000000000\r\n", "{"), 413, "request_too_large"},
		{"chunked too large", post("/tokenize", "Transfer-Encoding: chunked\r\n", "1400\r\n"+strings.Repeat(" ", 0x1400)+"\r\n0\r\n\r\n"), 413, "request_too_large"},
		{"invalid UTF-8", post("/tokenize", cl("{\"content\":\"a\xff\"}"), "{\"content\":\"a\xff\"}"), 400, "invalid_utf8"},
		{"truncated UTF-8", post("/tokenize", cl("{\"content\":\"\xe2\x82"), "{\"content\":\"\xe2\x82"), 400, "invalid_utf8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rawRequest(t, addr, tt.req, 0)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d: %q", r.status, tt.status, r.body)
			}
			if got := checkJSONError(t, r); got.Code != tt.code {
				t.Errorf("error %+v, want code %q", got, tt.code)
			}
		})
	}
}

// TestUTF8Param checks that a body that is not UTF-8 is refused with the
// member that holds the first bad byte as its parameter.
func TestUTF8Param(t *testing.T) {
	tests := []struct {
		name, body string
		param      any // "-": valid
	}{
		{"valid", "{\"prompt\":\"é€😀\"}", "-"},
		{"prompt", "{\"prompt\":\"a\xff\"}", "prompt"},
		{"second message", "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"user\",\"content\":\"\xc3\"}]}", "messages[1].content"},
		{"array element", "{\"prompt\":[\"a\",\"b\xed\xa0\x80\"]}", "prompt[1]"},
		{"after a nested object", "{\"stream_options\":{\"a\":1},\"stop\":[\"x\",\"\xf8\"]}", "stop[1]"},
		{"in a key", "{\"pro\xffmpt\":1}", "pro\ufffdmpt"},
		{"outside any value", "\xff{}", nil},
		{"cut at the end", "{\"content\":\"a\"}\xe2\x82", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkUTF8([]byte(tt.body))
			if tt.param == "-" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			e := toAPIError(err)
			if e.Status != 400 || e.Code != "invalid_utf8" || e.Param != tt.param || !strings.Contains(e.Message, "UTF-8") {
				t.Errorf("%+v, want a 400 invalid_utf8 for %q", e, tt.param)
			}
		})
	}
}
