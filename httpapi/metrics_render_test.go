package httpapi

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"llmserve/decode"
)

// goldenHTTP and goldenSnapshot are the fixed figures behind metricsGolden.
func goldenHTTP() httpFigures {
	return httpFigures{byCode: map[int]uint64{200: 10, 400: 2, 404: 1, 500: 1}, panics: 1, open: 3, goroutines: 2}
}

func goldenSnapshot() decode.MetricsSnapshot {
	return decode.MetricsSnapshot{
		Finished:        map[string]uint64{"stop": 1, "length": 2, "cancelled": 1, "error": 1},
		Rejected:        map[string]uint64{"queue_full": 2, "too_long": 1},
		PromptTokens:    127,
		GeneratedTokens: 9,
		SharedPrompt:    33,
		Panics:          1,
		Queued:          4,
		BusySlot:        3,
		Slots:           8,
		TTFT: decode.Histogram{Bounds: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
			Counts: []uint64{1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 1}, Sum: 45.743, Count: 4},
		ITL: decode.Histogram{Bounds: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1},
			Counts: []uint64{1, 2, 0, 0, 0, 1, 0, 0, 0, 0, 1}, Sum: 3.0345, Count: 5},
		CachedPrompt:   64,
		Preemptions:    2,
		KVBlocksUsed:   40,
		KVEvictions:    9,
		KVBlocksCached: 12,
		KVPaged:        true,
		KVLayout:       decode.KVLayout{BlockSize: 16, Blocks: 512, Layers: 22, Dim: 256, K: decode.KVF16, V: decode.KVQ8_0},
		KVContext:      2048,
		Graphs:         &decode.GraphStats{GraphCounts: decode.GraphCounts{Captures: 7, Replays: 1234, ParamUpdates: 3, Fallbacks: 1, EagerSteps: 56}},
	}
}

// render is the /metrics text of f and s.
func render(t *testing.T, f httpFigures, s *decode.MetricsSnapshot) string {
	t.Helper()
	var sb strings.Builder
	if err := writeMetrics(&sb, f, s); err != nil {
		t.Fatal(err)
	}
	return sb.String()
}

// diffLines names the first line where got and want differ.
func diffLines(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return fmt.Sprintf("line %d: got %q, want %q", i+1, a, b)
		}
	}
	return "no difference"
}

// TestMetricsGolden renders a fixed snapshot and compares the whole text
// with what the previous renderer wrote for it.
func TestMetricsGolden(t *testing.T) {
	s := goldenSnapshot()
	if got := render(t, goldenHTTP(), &s); got != metricsGolden {
		t.Errorf("/metrics differs from the golden text: %s", diffLines(got, metricsGolden))
	}
}

// TestMetricsSections checks what is left out when there is nothing to
// show: the scheduler while the model loads, the pool without one, the
// graphs for an engine without them.
func TestMetricsSections(t *testing.T) {
	httpOnly := metricsGolden[:strings.Index(metricsGolden, "# HELP llmserve_requests_finished_total")]
	noPool, noGraphs := goldenSnapshot(), goldenSnapshot()
	noPool.KVPaged = false
	noGraphs.Graphs = nil
	for _, tt := range []struct {
		name      string
		snap      *decode.MetricsSnapshot
		has, lack []string
	}{
		{"loading", nil, []string{"llmserve_http_requests_total{code=\"200\"} 10\n", "go_goroutines 2\n"}, []string{"llmserve_requests_finished_total", "llmserve_kv_", "llmserve_cuda_"}},
		{"no pool", &noPool, []string{"llmserve_slots_total 8\n", "llmserve_cuda_eager_steps_total 56\n"}, []string{"llmserve_kv_", "llmserve_prompt_tokens_cached_total"}},
		{"no graphs", &noGraphs, []string{"llmserve_kv_blocks_total 512\n"}, []string{"llmserve_cuda_"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := render(t, goldenHTTP(), tt.snap)
			if !strings.HasPrefix(got, httpOnly) {
				t.Errorf("the HTTP figures differ from the golden text: %s", diffLines(got, httpOnly))
			}
			for _, s := range tt.has {
				if !strings.Contains(got, s) {
					t.Errorf("lacks %q", s)
				}
			}
			for _, s := range tt.lack {
				if strings.Contains(got, s) {
					t.Errorf("shows %q", s)
				}
			}
		})
	}
}

// fakeGraphs is an engine's CUDA graph counters.
type fakeGraphs struct{ stats decode.GraphStats }

func (f fakeGraphs) GraphStats() decode.GraphStats { return f.stats }

// bucketStats are figures of three buckets; 16 sorts before 8 as text, so
// the order shows whether buckets go by size.
func bucketStats() decode.GraphStats {
	return decode.GraphStats{
		GraphCounts: decode.GraphCounts{Captures: 2, Replays: 1234, Fallbacks: 1, EagerSteps: 60},
		Buckets: []decode.BucketStats{
			{Size: 1, Nodes: 123, Capture: 2500 * time.Microsecond, Instantiate: 1250 * time.Microsecond, Replays: 1000, EagerSteps: 0, RealTokens: 1000},
			{Size: 8, Nodes: 130, Capture: 3 * time.Millisecond, Instantiate: 1500 * time.Microsecond, Replays: 234, EagerSteps: 2, RealTokens: 1500, PaddedTokens: 372},
			{Size: 16, EagerSteps: 7, RealTokens: 100, PaddedTokens: 12},
		},
	}
}

// TestMetricsGraphBuckets renders the per-bucket figures of a fake engine
// through the scheduler's Metrics: each bucket's lines in order of size,
// and the text without them is the text without buckets.
func TestMetricsGraphBuckets(t *testing.T) {
	m := decode.NewMetrics()
	m.WatchGraphs(fakeGraphs{bucketStats()})
	var sb strings.Builder
	if err := writeSchedulerMetrics(&sb, m.Snapshot()); err != nil {
		t.Fatal(err)
	}
	got := sb.String()
	want := []string{
		"llmserve_cuda_graph_replays_total 1234",
		`llmserve_cuda_graph_replays_total{bucket="1"} 1000`,
		`llmserve_cuda_graph_replays_total{bucket="8"} 234`,
		`llmserve_cuda_graph_replays_total{bucket="16"} 0`,
		"llmserve_cuda_eager_steps_total 60",
		`llmserve_cuda_eager_steps_total{bucket="1"} 0`,
		`llmserve_cuda_eager_steps_total{bucket="8"} 2`,
		`llmserve_cuda_eager_steps_total{bucket="16"} 7`,
		"# TYPE llmserve_cuda_graph_real_tokens_total counter",
		`llmserve_cuda_graph_real_tokens_total{bucket="1"} 1000`,
		`llmserve_cuda_graph_real_tokens_total{bucket="8"} 1500`,
		`llmserve_cuda_graph_real_tokens_total{bucket="16"} 100`,
		"# TYPE llmserve_cuda_graph_padded_tokens_total counter",
		`llmserve_cuda_graph_padded_tokens_total{bucket="1"} 0`,
		`llmserve_cuda_graph_padded_tokens_total{bucket="8"} 372`,
		`llmserve_cuda_graph_padded_tokens_total{bucket="16"} 12`,
		"# TYPE llmserve_cuda_graph_nodes gauge",
		`llmserve_cuda_graph_nodes{bucket="1"} 123`,
		`llmserve_cuda_graph_nodes{bucket="8"} 130`,
		`llmserve_cuda_graph_nodes{bucket="16"} 0`,
		"# TYPE llmserve_cuda_graph_capture_seconds gauge",
		`llmserve_cuda_graph_capture_seconds{bucket="1"} 0.0025`,
		`llmserve_cuda_graph_capture_seconds{bucket="8"} 0.003`,
		`llmserve_cuda_graph_capture_seconds{bucket="16"} 0`,
		"# TYPE llmserve_cuda_graph_instantiate_seconds gauge",
		`llmserve_cuda_graph_instantiate_seconds{bucket="1"} 0.00125`,
		`llmserve_cuda_graph_instantiate_seconds{bucket="8"} 0.0015`,
		`llmserve_cuda_graph_instantiate_seconds{bucket="16"} 0`,
	}
	// Every wanted line, in this order (other lines may come between).
	rest := got
	for _, w := range want {
		i := strings.Index(rest, "\n"+w+"\n")
		if i < 0 {
			t.Fatalf("lacks %q after the lines before it:\n%s", w, got)
		}
		rest = rest[i+len(w)+1:]
	}
	// Dropping the bucket lines and the per-bucket families leaves the
	// text of the totals alone.
	noBuckets := bucketStats()
	noBuckets.Buckets = nil
	m.WatchGraphs(fakeGraphs{noBuckets})
	var plain strings.Builder
	if err := writeSchedulerMetrics(&plain, m.Snapshot()); err != nil {
		t.Fatal(err)
	}
	perBucketOnly := []string{"llmserve_cuda_graph_real_tokens_total", "llmserve_cuda_graph_padded_tokens_total",
		"llmserve_cuda_graph_nodes", "llmserve_cuda_graph_capture_seconds", "llmserve_cuda_graph_instantiate_seconds"}
	var kept []string
	for _, line := range strings.SplitAfter(got, "\n") {
		f := strings.Fields(line)
		if strings.Contains(line, `{bucket="`) || len(f) > 2 && f[0] == "#" && slices.Contains(perBucketOnly, f[2]) {
			continue
		}
		kept = append(kept, line)
	}
	if k := strings.Join(kept, ""); k != plain.String() {
		t.Errorf("without the bucket lines, /metrics differs from the text without buckets: %s", diffLines(k, plain.String()))
	}
	checkExposition(t, got)
}

// checkExposition checks the text format's rules that a scraper enforces:
// one HELP and TYPE per family, before its samples, and every sample of a
// family together.
func checkExposition(t *testing.T, text string) {
	t.Helper()
	seen := map[string]bool{}
	current := ""
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "# HELP "):
			name := strings.Fields(line)[2]
			if seen[name] {
				t.Errorf("line %d: second HELP of %s", i+1, name)
			}
			seen[name], current = true, name
		case strings.HasPrefix(line, "# TYPE "):
			if name := strings.Fields(line)[2]; name != current {
				t.Errorf("line %d: TYPE of %s after the HELP of %s", i+1, name, current)
			}
		default:
			name, _, _ := strings.Cut(strings.Fields(line)[0], "{")
			if name != current && !strings.HasPrefix(name, current+"_") {
				t.Errorf("line %d: sample %s in the family of %s", i+1, name, current)
			}
		}
	}
}

// TestMetricsGoldenExposition checks the golden text itself against the
// format's rules, so the check above is known to accept a good text.
func TestMetricsGoldenExposition(t *testing.T) {
	checkExposition(t, metricsGolden)
}
