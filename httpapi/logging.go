package httpapi

import (
	"io"
	"net/http"
	"os"
	"time"

	"github.com/google/uuid"
	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
)

// NewLogger returns a JSON logger on w, or a human-readable console one
// when w is a terminal.
func NewLogger(w io.Writer) zerolog.Logger {
	if f, ok := w.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
		w = zerolog.ConsoleWriter{Out: f, TimeFormat: time.TimeOnly}
	}
	return zerolog.New(w).With().Timestamp().Logger()
}

// reqStats is what a handler reports about its request for the log line.
type reqStats struct {
	id               string
	promptTokens     int
	completionTokens int
	firstToken       time.Time // zero until the first token
	lastToken        time.Time
	err              string
}

// recorder wraps a ResponseWriter to keep the status and the request's stats.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
	stats  reqStats
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(p)
	r.bytes += int64(n)
	return n, err
}

// Flush passes through so that server-sent events leave at once.
func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// statsOf returns the stats of the request w answers, or nil outside logRequests.
func statsOf(w http.ResponseWriter) *reqStats {
	if rec, ok := w.(*recorder); ok {
		return &rec.stats
	}
	return nil
}

// requestID returns the id of the request w answers.
func requestID(w http.ResponseWriter) string {
	if st := statsOf(w); st != nil {
		return st.id
	}
	return uuid.NewString()
}

// logRequests gives every request a uuid, counts its status and writes
// one log line when it ends.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &recorder{ResponseWriter: w, stats: reqStats{id: uuid.NewString()}}
		rec.Header().Set("X-Request-Id", rec.stats.id)
		next.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		s.metrics.count(rec.status)
		st := &rec.stats
		ev := s.cfg.Logger.Info()
		if rec.status >= 500 {
			ev = s.cfg.Logger.Error()
		}
		ev = ev.Str("id", st.id).Str("method", r.Method).Str("path", r.URL.Path).
			Int("status", rec.status).Dur("duration_ms", time.Since(start)).Int64("bytes", rec.bytes)
		if st.promptTokens > 0 || st.completionTokens > 0 {
			ev = ev.Int("prompt_tokens", st.promptTokens).Int("completion_tokens", st.completionTokens)
		}
		if !st.firstToken.IsZero() {
			ev = ev.Dur("ttft_ms", st.firstToken.Sub(start))
			if gen := st.lastToken.Sub(st.firstToken).Seconds(); st.completionTokens > 1 && gen > 0 {
				ev = ev.Float64("tokens_per_s", float64(st.completionTokens-1)/gen)
			}
		}
		if st.err != "" {
			ev = ev.Str("error", st.err)
		}
		ev.Msg("request")
	})
}
