package httpapi

import (
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"sync"
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

// serveMetrics renders the HTTP and scheduler counters for Prometheus.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	s.metrics.mu.Lock()
	codes := make([]int, 0, len(s.metrics.byCode))
	for c := range s.metrics.byCode {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	fmt.Fprint(w, "# HELP llmserve_http_requests_total HTTP responses, by status code.\n# TYPE llmserve_http_requests_total counter\n")
	for _, c := range codes {
		fmt.Fprintf(w, "llmserve_http_requests_total{code=\"%d\"} %d\n", c, s.metrics.byCode[c])
	}
	fmt.Fprintf(w, "# HELP llmserve_http_panics_total Handlers that panicked (each answered 500).\n# TYPE llmserve_http_panics_total counter\nllmserve_http_panics_total %d\n", *s.metrics.panics)
	s.metrics.mu.Unlock()
	fmt.Fprintf(w, "# HELP llmserve_http_open_connections HTTP connections open now.\n# TYPE llmserve_http_open_connections gauge\nllmserve_http_open_connections %d\n", s.conns.Load())
	fmt.Fprintf(w, "# HELP go_goroutines Goroutines that currently exist.\n# TYPE go_goroutines gauge\ngo_goroutines %d\n", runtime.NumGoroutine())
	if m := s.model.Load(); m != nil {
		if err := m.Scheduler.Metrics().WritePrometheus(w); err != nil {
			s.cfg.Logger.Warn().Err(err).Msg("writing metrics")
		}
	}
}
