package httpapi

import (
	"io"
	"net/http"
	"runtime"
	"slices"
	"sync"

	"llmserve/decode"
)

// httpMetrics counts responses by status code, and handler panics.
type httpMetrics struct {
	mu     *sync.Mutex    // guards byCode and panics
	byCode map[int]uint64 // responses sent, by HTTP status
	panics *uint64        // handlers that panicked
}

func newHTTPMetrics() httpMetrics {
	return httpMetrics{mu: &sync.Mutex{}, byCode: map[int]uint64{}, panics: new(uint64)}
}

func (m httpMetrics) count(code int) {
	m.mu.Lock()
	m.byCode[code]++
	m.mu.Unlock()
}

// panic counts a recovered handler panic and its 500.
func (m httpMetrics) panic() {
	m.mu.Lock()
	*m.panics++
	m.byCode[http.StatusInternalServerError]++
	m.mu.Unlock()
}

// httpFigures are the HTTP server's figures at one moment, for /metrics.
type httpFigures struct {
	byCode     map[int]uint64 // responses sent, by HTTP status
	panics     uint64         // handlers that panicked
	open       int64          // connections open now
	goroutines int
}

// figures copies the counters.
func (m httpMetrics) figures() httpFigures {
	m.mu.Lock()
	defer m.mu.Unlock()
	f := httpFigures{byCode: make(map[int]uint64, len(m.byCode)), panics: *m.panics}
	for c, n := range m.byCode {
		f.byCode[c] = n
	}
	return f
}

// writeHTTPMetrics renders f in the Prometheus text format.
func writeHTTPMetrics(w io.Writer, f httpFigures) error {
	p := &promWriter{w: w}
	codes := make([]int, 0, len(f.byCode))
	for c := range f.byCode {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	p.header("llmserve_http_requests_total", "counter", "HTTP responses, by status code.")
	for _, c := range codes {
		p.printf("llmserve_http_requests_total{code=\"%d\"} %d\n", c, f.byCode[c])
	}
	p.header("llmserve_http_panics_total", "counter", "Handlers that panicked (each answered 500).")
	p.printf("llmserve_http_panics_total %d\n", f.panics)
	p.header("llmserve_http_open_connections", "gauge", "HTTP connections open now.")
	p.printf("llmserve_http_open_connections %d\n", f.open)
	p.header("go_goroutines", "gauge", "Goroutines that currently exist.")
	p.printf("go_goroutines %d\n", f.goroutines)
	return p.err
}

// writeMetrics renders the HTTP figures, then the scheduler's snapshot
// when a model is loaded (sched nil while loading).
func writeMetrics(w io.Writer, f httpFigures, sched *decode.MetricsSnapshot) error {
	if err := writeHTTPMetrics(w, f); err != nil {
		return err
	}
	if sched == nil {
		return nil
	}
	return writeSchedulerMetrics(w, *sched)
}

// serveMetrics renders the HTTP and scheduler counters for Prometheus.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	f := s.metrics.figures()
	f.open, f.goroutines = s.conns.Load(), runtime.NumGoroutine()
	var sched *decode.MetricsSnapshot
	if m := s.model.Load(); m != nil {
		snap := m.Scheduler.Metrics().Snapshot()
		sched = &snap
	}
	if err := writeMetrics(w, f, sched); err != nil {
		s.cfg.Logger.Warn().Err(err).Msg("writing metrics")
	}
}
