package servertest

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Metrics reads the named samples from one GET /metrics. A name is the
// sample's full name with its labels as exposed, e.g.
// `llmserve_requests_rejected_total{reason="queue_full"}`; a name that is
// absent is an error.
func (s *Server) Metrics(names ...string) (map[string]float64, error) {
	status, body, err := s.Get("/metrics")
	if err != nil {
		return nil, fmt.Errorf("/metrics: %w", err)
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("/metrics: status %d: %s", status, Tail(string(body), 300))
	}
	return ParseMetrics(string(body), names...)
}

// Metric reads one sample of GET /metrics, as Metrics.
func (s *Server) Metric(name string) (float64, error) {
	m, err := s.Metrics(name)
	return m[name], err
}

// ParseMetrics finds the named samples in text of the Prometheus text
// format; a name that is absent is an error.
func ParseMetrics(text string, names ...string) (map[string]float64, error) {
	out := make(map[string]float64, len(names))
	for line := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		for _, n := range names {
			if v, ok := strings.CutPrefix(line, n+" "); ok {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil {
					return nil, fmt.Errorf("metric %q: %w", line, err)
				}
				out[n] = f
			}
		}
	}
	for _, n := range names {
		if _, ok := out[n]; !ok {
			return nil, fmt.Errorf("/metrics lacks %s", n)
		}
	}
	return out, nil
}
