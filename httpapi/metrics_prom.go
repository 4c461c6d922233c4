package httpapi

import (
	"fmt"
	"io"
	"slices"
	"strconv"

	"llmserve/decode"
)

// promWriter writes the Prometheus text format, keeping the first error.
type promWriter struct {
	w   io.Writer
	err error // the first write error; later writes are skipped
}

func (p *promWriter) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

func (p *promWriter) header(name, typ, help string) {
	p.printf("# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

func (p *promWriter) scalar(name, typ, help string, v float64) {
	p.header(name, typ, help)
	p.printf("%s %s\n", name, formatFloat(v))
}

// labeled writes one sample per key of values, keys in order.
func (p *promWriter) labeled(name, typ, help, label string, values map[string]uint64) {
	p.header(name, typ, help)
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		p.printf("%s{%s=%q} %d\n", name, label, k, values[k])
	}
}

// sample writes one sample of name with one label, without a header (for
// a family whose header is written already).
func (p *promWriter) sample(name, label, value string, v float64) {
	p.printf("%s{%s=%q} %s\n", name, label, value, formatFloat(v))
}

func (p *promWriter) histogram(name, help string, h decode.Histogram) {
	p.header(name, "histogram", help)
	var cum uint64
	for i, b := range h.Bounds {
		if i < len(h.Counts) {
			cum += h.Counts[i]
		}
		p.printf("%s_bucket{le=%q} %d\n", name, formatFloat(b), cum)
	}
	p.printf("%s_bucket{le=\"+Inf\"} %d\n", name, h.Count)
	p.printf("%s_sum %s\n%s_count %d\n", name, formatFloat(h.Sum), name, h.Count)
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
