package decode

import (
	"slices"
	"sync"
	"time"
)

// Metrics counts what the scheduler does. It is safe for concurrent use;
// Snapshot copies the counters for a renderer (httpapi writes them in the
// Prometheus text format).
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
	ttft      Histogram         // seconds from submission to the first token
	itl       Histogram         // seconds between consecutive tokens of a request
	graphs    GraphStatser      // the engine's CUDA graph counters, or nil
	kv        kvMetrics         // the paged KV pool, when the engine has one
}

// WatchGraphs adds an engine's CUDA graph counters to the metrics.
func (m *Metrics) WatchGraphs(g GraphStatser) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.graphs = g
}

// Histogram counts observations in buckets with fixed upper bounds.
type Histogram struct {
	Bounds []float64 // upper bounds, ascending; +Inf is implicit
	Counts []uint64  // [len(Bounds)+1] observations per bucket (not cumulative); the last is above every bound
	Sum    float64   // of every observation
	Count  uint64    // observations
}

func newHistogram(bounds ...float64) Histogram {
	return Histogram{Bounds: bounds, Counts: make([]uint64, len(bounds)+1)}
}

func (h *Histogram) observe(v float64) {
	i, _ := slices.BinarySearch(h.Bounds, v)
	h.Counts[i]++
	h.Sum += v
	h.Count++
}

// clone is a copy that shares no memory with h.
func (h Histogram) clone() Histogram {
	h.Bounds, h.Counts = slices.Clone(h.Bounds), slices.Clone(h.Counts)
	return h
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

// MetricsSnapshot is a copy of the counters, for the /metrics renderer,
// tests and logs.
type MetricsSnapshot struct {
	Finished         map[string]uint64 // requests ended, by outcome
	Rejected         map[string]uint64 // requests refused at submission, by reason
	PromptTokens     uint64
	GeneratedTokens  uint64
	SharedPrompt     uint64 // prompt tokens copied between choices instead of computed
	Panics           uint64
	Queued, BusySlot int
	Slots            int       // sequence slots in all
	TTFT             Histogram // seconds from submission to the first token
	ITL              Histogram // seconds between consecutive tokens of a request
	CachedPrompt     uint64    // prompt tokens taken from the prefix cache instead of computed
	Preemptions      uint64    // sequences preempted when the KV pool ran dry
	KVBlocksUsed     int       // blocks of the KV pool held by sequences
	KVEvictions      uint64    // cached blocks evicted to make room
	KVBlocksCached   int       // full blocks the prefix cache can hand to a new request
	KVPaged          bool      // the engine has a paged KV pool: KVLayout and KVContext describe it
	KVLayout         KVLayout
	KVContext        int         // positions one request may reach
	Graphs           *GraphStats // the engine's CUDA graph counters; nil when it has none
}

// Snapshot copies the counters.
func (m *Metrics) Snapshot() MetricsSnapshot {
	m.mu.Lock()
	s := MetricsSnapshot{
		Finished:        maps(m.finished),
		Rejected:        maps(m.rejected),
		PromptTokens:    m.prompt,
		GeneratedTokens: m.generated,
		SharedPrompt:    m.shared,
		Panics:          m.panics,
		Queued:          m.queued,
		BusySlot:        m.busy,
		Slots:           m.slots,
		TTFT:            m.ttft.clone(),
		ITL:             m.itl.clone(),
		CachedPrompt:    m.kv.cachedPrompt,
		Preemptions:     m.kv.preemptions,
		KVBlocksUsed:    m.kv.used,
		KVEvictions:     m.kv.evictions,
		KVBlocksCached:  m.kv.cached,
		KVPaged:         m.kv.paged,
		KVLayout:        m.kv.layout,
		KVContext:       m.kv.context,
	}
	graphs := m.graphs
	m.mu.Unlock()
	// The engine's counters are read outside the mutex: they are the
	// engine's own, safe to read from any goroutine.
	if graphs != nil {
		g := graphs.GraphStats()
		s.Graphs = &g
	}
	return s
}

func maps(m map[string]uint64) map[string]uint64 {
	c := make(map[string]uint64, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
