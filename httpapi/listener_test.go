package httpapi

import (
	"strings"
	"testing"
)

// TestProtocolErrorsAreJSON checks that the answers net/http gives itself
// to malformed requests leave as JSON errors with a 4xx.
func TestProtocolErrorsAreJSON(t *testing.T) {
	e := newEnv(t, envOptions{})
	addr := serveFull(t, e)
	tests := []struct {
		name, req string
		status    int
		code      string
	}{
		{"garbage request line", "GARBAGE\r\n\r\n", 400, "malformed_request"},
		{"no Host", "GET /health HTTP/1.1\r\n\r\n", 400, "malformed_request"},
		{"header without colon", "GET /health HTTP/1.1\r\nHost: x\r\nbroken\r\n\r\n", 400, "malformed_request"},
		{"two Content-Lengths", "POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}", 400, "malformed_request"},
		{"headers too large", "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 200<<10) + "\r\n\r\n", 431, "headers_too_large"},
		{"unknown transfer encoding", "POST /tokenize HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 400, "unsupported_transfer_encoding"},
		{"HTTP/2.0 without preface", "GET /health HTTP/2.0\r\nHost: x\r\n\r\n", 400, "unsupported_http_version"},
		{"HTTP/3.1", "GET /health HTTP/3.1\r\nHost: x\r\n\r\n", 400, "unsupported_http_version"},
		{"unknown Expect", "POST /tokenize HTTP/1.1\r\nHost: x\r\nExpect: magic\r\nContent-Length: 2\r\n\r\n{}", 417, "expectation_failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rawRequest(t, addr, tt.req, 0)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d: %q", r.status, tt.status, r.body)
			}
			if got := checkJSONError(t, r); got.Code != tt.code || got.Type != "invalid_request_error" {
				t.Errorf("error %+v, want code %q", got, tt.code)
			}
		})
	}
	// The server still answers after all that.
	if r := rawRequest(t, addr, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n", 0); r.status != 200 {
		t.Errorf("/health: %d %q", r.status, r.body)
	}
}

// TestCannedErrorRecognition checks which writes count as net/http's own
// error answers: never a response that went through a handler.
func TestCannedErrorRecognition(t *testing.T) {
	tests := []struct {
		name   string
		write  string
		status int // 0: passed through
	}{
		{"canned 400", "HTTP/1.1 400 Bad Request" + cannedHeaders + "400 Bad Request", 400},
		{"canned 505", "HTTP/1.1 505 HTTP Version Not Supported: unsupported protocol version" + cannedHeaders + "505 x", 400},
		{"handler 400", "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nDate: Tue, 01 Dec 2026 00:00:00 GMT\r\n\r\n{}", 0},
		{"handler text/plain 200", "HTTP/1.1 200 OK" + cannedHeaders + "ok", 0},
		{"headers then canned text", "HTTP/1.1 200 OK\r\nDate: x\r\n" + cannedHeaders + "x", 0},
		{"body bytes", `{"choices":[]}`, 0},
		{"417", expectFailed + "Connection: close\r\nContent-Length: 0\r\nDate: x\r\n\r\n", 417},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := 0
			if e := cannedError([]byte(tt.write)); e != nil {
				got = e.Status
			}
			if got != tt.status {
				t.Errorf("status %d, want %d", got, tt.status)
			}
		})
	}
}
