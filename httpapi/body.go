package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"time"
)

// drainGrace is how long a connection may still take to deliver the rest
// of a request body that its handler did not read. net/http reads up to
// 256 KiB of such a body after the response, to reuse the connection;
// past this time the connection is closed instead, so a client that
// trickles a body to a route that never reads it cannot hold it open.
const drainGrace = 500 * time.Millisecond

// bodyReadError is a failure to read the request body off the connection:
// a stalled client, a broken chunked encoding, a body cut short. It is the
// client's fault.
type bodyReadError struct{ err error }

func (e *bodyReadError) Error() string { return "reading the request body: " + e.err.Error() }
func (e *bodyReadError) Unwrap() error { return e.err }

// guardBody bounds every request body, on every route, in bytes and in
// time: the connection's read deadline is set for the body's arrival and
// lifted when the body has been read to its end, so it never touches a
// response stream (net/http cancels a request's context when a read
// deadline passes while it watches the connection). A response sent
// before the body was read to its end closes the connection (after
// drainGrace at most) instead of waiting for the rest.
func (s *Server) guardBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		b := &guardedBody{src: r.Body, rc: rc}
		if rc.SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout)) == nil {
			b.deadline = true
		}
		gw := &guardedWriter{ResponseWriter: w, body: b}
		if r.ContentLength > s.cfg.MaxBodyBytes {
			// Refuse at once what is declared too large, unread.
			writeError(gw, &http.MaxBytesError{Limit: s.cfg.MaxBodyBytes})
			return
		}
		r.Body = http.MaxBytesReader(gw, b, s.cfg.MaxBodyBytes)
		next.ServeHTTP(gw, r)
		gw.answered()
	})
}

// readBody reads the whole body of a request that a route takes before
// its handler runs, so that every failure on the wire (a stall, a broken
// chunked encoding, a body too large) is answered as one, even when it
// comes after a complete JSON value that a streaming decoder would have
// taken and stopped at, and checks that the body is UTF-8, as JSON must
// be (encoding/json would turn bad bytes into U+FFFD silently). Bodies are
// bounded by MaxBodyBytes.
func (s *Server) readBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		size := int64(512)
		if r.ContentLength > 0 && r.ContentLength <= s.cfg.MaxBodyBytes {
			size = r.ContentLength + 1 // +1: room to read the end
		}
		body, err := readWhole(r.Body, size)
		if err == nil {
			err = checkUTF8(body)
		}
		if err != nil {
			writeError(w, err)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// readWhole reads r to its end into a buffer of capacity size to begin with.
func readWhole(r io.Reader, size int64) ([]byte, error) {
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// guardedBody tracks whether the body was read to its end, lifts the read
// deadline there and marks its read failures as the client's.
type guardedBody struct {
	src      io.ReadCloser
	rc       *http.ResponseController
	deadline bool // a read deadline is set on the connection
	eof      bool // the body was read to its end
}

func (b *guardedBody) Read(p []byte) (int, error) {
	if b.eof {
		return 0, io.EOF
	}
	n, err := b.src.Read(p)
	switch {
	case err == io.EOF:
		b.eof = true
		if b.deadline {
			b.deadline = false
			_ = b.rc.SetReadDeadline(time.Time{})
		}
	case err != nil:
		return n, &bodyReadError{err}
	}
	return n, err
}

func (b *guardedBody) Close() error { return b.src.Close() }

// guardedWriter closes the connection after a response that started
// before the request body was read to its end.
type guardedWriter struct {
	http.ResponseWriter
	body    *guardedBody
	started bool // the response header was sent
}

// answered is called when the response starts, and when the handler
// returns: an unread body is left to arrive within drainGrace at most.
func (g *guardedWriter) answered() {
	if g.started {
		return
	}
	g.started = true
	if g.body.eof {
		return
	}
	g.Header().Set("Connection", "close")
	_ = g.body.rc.SetReadDeadline(time.Now().Add(drainGrace))
	g.body.deadline = true
}

func (g *guardedWriter) WriteHeader(code int) {
	if code >= 200 {
		g.answered()
	}
	g.ResponseWriter.WriteHeader(code)
}

func (g *guardedWriter) Write(p []byte) (int, error) {
	g.answered()
	return g.ResponseWriter.Write(p)
}

// Flush passes through so that server-sent events leave at once.
func (g *guardedWriter) Flush() {
	g.answered()
	if f, ok := g.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (g *guardedWriter) Unwrap() http.ResponseWriter { return g.ResponseWriter }
