package httpapi

import (
	"fmt"
	"net/http"
	"runtime/debug"
)

// errPanic is a handler that panicked; the client sees a 500.
var errPanic = &apiError{Status: http.StatusInternalServerError, Type: "server_error", Code: "internal_error",
	Message: "internal server error"}

// recoverPanics ends a request whose handler panics with a 500 JSON error
// (or, when the response had already started, by cutting the connection,
// so that the client cannot take a truncated response for a whole one),
// logs the panic with its stack and counts it in /metrics.
func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pw := &startedWriter{ResponseWriter: w}
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.metrics.panic()
			s.cfg.Logger.Error().Str("method", r.Method).Str("path", r.URL.Path).
				Str("panic", fmt.Sprint(v)).Str("stack", string(debug.Stack())).Msg("handler panic")
			if pw.started {
				panic(http.ErrAbortHandler)
			}
			writeError(w, errPanic)
		}()
		next.ServeHTTP(pw, r)
	})
}

// startedWriter notes whether the response has started.
type startedWriter struct {
	http.ResponseWriter
	started bool // the header was sent
}

func (w *startedWriter) WriteHeader(code int) {
	if code >= 200 {
		w.started = true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *startedWriter) Write(p []byte) (int, error) {
	w.started = true
	return w.ResponseWriter.Write(p)
}

// Flush passes through so that server-sent events leave at once.
func (w *startedWriter) Flush() {
	w.started = true
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *startedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
