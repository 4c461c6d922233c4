package decode

// kvMetrics is what Metrics shows of a paged KV pool; its fields are
// guarded by the Metrics' mutex.
type kvMetrics struct {
	paged        bool // a pool is described (setKVLayout was called)
	layout       KVLayout
	context      int    // positions one request may reach
	used, cached int    // blocks held by sequences; blocks the prefix cache can find
	evictions    uint64 // cached blocks evicted to make room
	cachedPrompt uint64 // prompt tokens taken from the prefix cache
	preemptions  uint64 // sequences preempted (recomputed later) when the pool ran dry
}

func (m *Metrics) setKVLayout(l KVLayout, context int) {
	m.mu.Lock()
	m.kv.paged, m.kv.layout, m.kv.context = true, l, context
	m.mu.Unlock()
}

func (m *Metrics) setKVBlocks(used, cached int, evictions uint64) {
	m.mu.Lock()
	m.kv.used, m.kv.cached, m.kv.evictions = used, cached, evictions
	m.mu.Unlock()
}

func (m *Metrics) cachedPrompt(tokens int) {
	m.mu.Lock()
	m.kv.cachedPrompt += uint64(tokens)
	m.mu.Unlock()
}

func (m *Metrics) preempted() {
	m.mu.Lock()
	m.kv.preemptions++
	m.mu.Unlock()
}
