package decode

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Metrics counts what the scheduler does. It is safe for concurrent use
// and renders itself in the Prometheus text format.
type Metrics struct {
	mu        sync.Mutex        // guards every field below
	finished  map[string]uint64 // requests ended, by outcome (stop, length, cancelled, error)
	rejected  map[string]uint64 // requests refused at submission, by reason
	prompt    uint64            // prompt tokens of admitted requests
	generated uint64            // tokens sampled
	shared    uint64            // prompt tokens copied from another choice's KV cache instead of computed
	panics    uint64            // panics recovered (each ended a request or a step with ErrInternal)
	queued    int               // requests waiting for a slot
	busy      int               // slots in use
	slots     int               // slots in all
	ttft      histogram         // seconds from submission to the first token
	itl       histogram         // seconds between consecutive tokens of a request
	graphs    GraphStatser      // the engine's CUDA graph counters, or nil
	kv        kvMetrics         // the paged KV pool, when the engine has one
}

// WatchGraphs adds an engine's CUDA graph counters to the metrics.
func (m *Metrics) WatchGraphs(g GraphStatser) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.graphs = g
}

// histogram is a cumulative-bucket histogram with fixed upper bounds.
type histogram struct {
	bounds []float64 // upper bounds, ascending; +Inf is implicit
	counts []uint64  // [len(bounds)+1] observations per bucket (not cumulative)
	sum    float64
	n      uint64
}

func newHistogram(bounds ...float64) histogram {
	return histogram{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

func (h *histogram) observe(v float64) {
	i, _ := slices.BinarySearch(h.bounds, v)
	h.counts[i]++
	h.sum += v
	h.n++
}

// NewMetrics returns empty counters.
func NewMetrics() *Metrics {
	return &Metrics{
		finished: map[string]uint64{},
		rejected: map[string]uint64{},
		ttft:     newHistogram(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
		itl:      newHistogram(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1),
	}
}

func (m *Metrics) finish(outcome string) {
	m.mu.Lock()
	m.finished[outcome]++
	m.mu.Unlock()
}

func (m *Metrics) reject(reason string) {
	m.mu.Lock()
	m.rejected[reason]++
	m.mu.Unlock()
}

func (m *Metrics) admitted(promptTokens int) {
	m.mu.Lock()
	m.prompt += uint64(promptTokens)
	m.mu.Unlock()
}

// token records a sampled token; since is the time since submission (for
// the first token) or since the previous token.
func (m *Metrics) token(first bool, since time.Duration) {
	m.mu.Lock()
	m.generated++
	if first {
		m.ttft.observe(since.Seconds())
	} else {
		m.itl.observe(since.Seconds())
	}
	m.mu.Unlock()
}

func (m *Metrics) panicked() {
	m.mu.Lock()
	m.panics++
	m.mu.Unlock()
}

func (m *Metrics) sharedPrompt(tokens int) {
	m.mu.Lock()
	m.shared += uint64(tokens)
	m.mu.Unlock()
}

func (m *Metrics) setOccupancy(queued, busy, slots int) {
	m.mu.Lock()
	m.queued, m.busy, m.slots = queued, busy, slots
	m.mu.Unlock()
}

// MetricsSnapshot is a copy of the scalar counters, for tests and logs.
type MetricsSnapshot struct {
	Finished         map[string]uint64
	Rejected         map[string]uint64
	PromptTokens     uint64
	GeneratedTokens  uint64
	SharedPrompt     uint64 // prompt tokens copied between choices instead of computed
	Panics           uint64
	Queued, BusySlot int
	CachedPrompt     uint64 // prompt tokens taken from the prefix cache instead of computed
	Preemptions      uint64 // sequences preempted when the KV pool ran dry
	KVBlocksUsed     int    // blocks of the KV pool held by sequences
	KVEvictions      uint64 // cached blocks evicted to make room
}

// Snapshot copies the scalar counters.
func (m *Metrics) Snapshot() MetricsSnapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	return MetricsSnapshot{
		Finished:        maps(m.finished),
		Rejected:        maps(m.rejected),
		PromptTokens:    m.prompt,
		GeneratedTokens: m.generated,
		SharedPrompt:    m.shared,
		Panics:          m.panics,
		Queued:          m.queued,
		BusySlot:        m.busy,
		CachedPrompt:    m.kv.cachedPrompt,
		Preemptions:     m.kv.preemptions,
		KVBlocksUsed:    m.kv.used,
		KVEvictions:     m.kv.evictions,
	}
}

func maps(m map[string]uint64) map[string]uint64 {
	c := make(map[string]uint64, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// WritePrometheus renders the counters in the Prometheus text format.
func (m *Metrics) WritePrometheus(w io.Writer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := &promWriter{w: w}
	p.labeled("llmserve_requests_finished_total", "counter", "Requests ended, by outcome.", "outcome", m.finished)
	p.labeled("llmserve_requests_rejected_total", "counter", "Requests refused at submission, by reason.", "reason", m.rejected)
	p.scalar("llmserve_prompt_tokens_total", "counter", "Prompt tokens of admitted requests.", float64(m.prompt))
	p.scalar("llmserve_generated_tokens_total", "counter", "Tokens generated.", float64(m.generated))
	p.scalar("llmserve_prompt_tokens_shared_total", "counter", "Prompt tokens of a choice copied from another choice's KV cache instead of computed.", float64(m.shared))
	p.scalar("llmserve_panics_total", "counter", "Panics recovered while serving; each ended its request, or the requests of its step, with an internal error.", float64(m.panics))
	p.scalar("llmserve_queue_depth", "gauge", "Requests waiting for a slot.", float64(m.queued))
	p.scalar("llmserve_slots_busy", "gauge", "Sequence slots in use.", float64(m.busy))
	p.scalar("llmserve_slots_total", "gauge", "Sequence slots in all.", float64(m.slots))
	p.histogram("llmserve_time_to_first_token_seconds", "Time from submission to the first generated token.", &m.ttft)
	p.histogram("llmserve_inter_token_latency_seconds", "Time between consecutive tokens of a request.", &m.itl)
	m.kv.write(p)
	if m.graphs != nil {
		g := m.graphs.GraphStats()
		p.scalar("llmserve_cuda_graph_captures_total", "counter", "CUDA graphs captured and instantiated.", float64(g.Captures))
		p.scalar("llmserve_cuda_graph_replays_total", "counter", "Steps run by replaying a CUDA graph.", float64(g.Replays))
		p.scalar("llmserve_cuda_graph_param_updates_total", "counter", "Kernel-node parameter updates before replays.", float64(g.ParamUpdates))
		p.scalar("llmserve_cuda_graph_fallbacks_total", "counter", "Graph captures or instantiations that failed (their batch size runs eagerly).", float64(g.Fallbacks))
		p.scalar("llmserve_cuda_eager_steps_total", "counter", "Steps run by launching kernels one by one.", float64(g.EagerSteps))
	}
	return p.err
}

// promWriter writes Prometheus text, keeping the first error.
type promWriter struct {
	w   io.Writer
	err error
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

func (p *promWriter) histogram(name, help string, h *histogram) {
	p.header(name, "histogram", help)
	var cum uint64
	for i, b := range h.bounds {
		cum += h.counts[i]
		p.printf("%s_bucket{le=%q} %d\n", name, formatFloat(b), cum)
	}
	p.printf("%s_bucket{le=\"+Inf\"} %d\n", name, h.n)
	p.printf("%s_sum %s\n%s_count %d\n", name, formatFloat(h.sum), name, h.n)
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
