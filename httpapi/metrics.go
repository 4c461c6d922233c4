package httpapi

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
)

// httpMetrics counts responses by status code.
type httpMetrics struct {
	mu     *sync.Mutex    // guards byCode
	byCode map[int]uint64 // responses sent, by HTTP status
}

func newHTTPMetrics() httpMetrics {
	return httpMetrics{mu: &sync.Mutex{}, byCode: map[int]uint64{}}
}

func (m httpMetrics) count(code int) {
	m.mu.Lock()
	m.byCode[code]++
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
	s.metrics.mu.Unlock()
	if m := s.model.Load(); m != nil {
		if err := m.Scheduler.Metrics().WritePrometheus(w); err != nil {
			s.cfg.Logger.Warn().Err(err).Msg("writing metrics")
		}
	}
}
