package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// net/http answers some malformed requests itself, before any handler
// runs, with a canned text/plain response written straight to the
// connection in one write: "HTTP/1.1 CODE TEXT" + cannedHeaders + a short
// text body. It never adds a Date header there, while every response
// that goes through a handler has one. It answers an unknown Expect
// header the same way with an empty 417 (that one does carry a Date).
const (
	cannedHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
	expectFailed  = "HTTP/1.1 417 Expectation Failed\r\n"
)

// Listener wraps ln so that the server's own answers to malformed
// requests (bad request line or headers, headers too large, an unknown
// transfer encoding or protocol version, an unknown Expect) leave as
// OpenAI-style JSON errors like every other error, and so that /metrics
// can count the open connections. Serve the http.Server of HTTPServer on it.
func (s *Server) Listener(ln net.Listener) net.Listener {
	return &listener{Listener: ln, s: s}
}

type listener struct {
	net.Listener
	s *Server
}

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.s.conns.Add(1)
	return &conn{Conn: c, s: l.s}, nil
}

// conn rewrites the server's canned error responses as they are written.
type conn struct {
	net.Conn
	s      *Server
	closed sync.Once // the open-connection count drops once
}

func (c *conn) Write(p []byte) (int, error) {
	if len(p) < 12 || !bytes.HasPrefix(p, []byte("HTTP/1.1 ")) {
		return c.Conn.Write(p)
	}
	e := cannedError(p)
	if e == nil {
		return c.Conn.Write(p)
	}
	c.s.metrics.count(e.Status)
	c.s.cfg.Logger.Info().Int("status", e.Status).Str("remote", c.RemoteAddr().String()).
		Str("error", e.Message).Msg("malformed request")
	body, err := json.Marshal(errorBody{Error: e})
	if err != nil {
		return c.Conn.Write(p)
	}
	body = append(body, '\n')
	head := fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n",
		e.Status, http.StatusText(e.Status), len(body))
	if _, err := c.Conn.Write(append([]byte(head), body...)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// CloseWrite lets net/http half-close the connection before it hangs up
// after a 431, so that the client can read the answer.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *conn) Close() error {
	c.closed.Do(func() { c.s.conns.Add(-1) })
	return c.Conn.Close()
}

// cannedError returns the error a canned net/http response in p stands
// for, or nil when p is not one.
func cannedError(p []byte) *apiError {
	if bytes.HasPrefix(p, []byte(expectFailed)) && bytes.HasSuffix(p, []byte("\r\n\r\n")) {
		return &apiError{Status: http.StatusExpectationFailed, Type: "invalid_request_error", Code: "expectation_failed",
			Message: "the Expect header is not supported (only 100-continue is)"}
	}
	line, rest, ok := bytes.Cut(p, []byte(cannedHeaders))
	if !ok || bytes.Contains(line, []byte("\r\n")) {
		return nil
	}
	code, err := strconv.Atoi(string(line[len("HTTP/1.1 "):min(len(line), len("HTTP/1.1 123"))]))
	if err != nil {
		return nil
	}
	text := string(rest)
	switch code {
	case http.StatusRequestHeaderFieldsTooLarge:
		return &apiError{Status: code, Type: "invalid_request_error", Code: "headers_too_large",
			Message: "the request headers are larger than the server accepts"}
	case http.StatusNotImplemented:
		// The client sent a transfer coding the server does not take: its
		// fault, and a 4xx keeps clients from retrying it as they do a 5xx.
		return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "unsupported_transfer_encoding",
			Message: "malformed HTTP request: unsupported Transfer-Encoding (only chunked is)"}
	case http.StatusHTTPVersionNotSupported:
		return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "unsupported_http_version",
			Message: "malformed HTTP request: unsupported protocol version (HTTP/1.0 and HTTP/1.1 are)"}
	}
	if code < 400 || code > 599 {
		return nil
	}
	// The body is "400 Bad Request" or "400 Bad Request: WHAT".
	what := "bad request line or headers"
	if _, after, ok := strings.Cut(text, ": "); ok && after != "" {
		what = after
	}
	return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Code: "malformed_request",
		Message: "malformed HTTP request: " + what}
}
