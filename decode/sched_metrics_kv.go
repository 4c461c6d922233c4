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

// write renders the pool's figures; the caller holds the mutex.
func (k *kvMetrics) write(p *promWriter) {
	if !k.paged {
		return
	}
	l := k.layout
	p.scalar("llmserve_kv_bytes_per_token", "gauge", "KV cache bytes one token takes over all layers ("+l.K.String()+" keys, "+l.V.String()+" values).", float64(l.BytesPerToken()))
	p.scalar("llmserve_kv_bytes_per_slot", "gauge", "KV cache bytes of one request at the full context.", float64(l.BytesPerToken()*int64(k.context)))
	p.scalar("llmserve_kv_pool_bytes", "gauge", "Bytes of the paged KV pool.", float64(l.PoolBytes()))
	p.scalar("llmserve_kv_block_tokens", "gauge", "Tokens per block of the KV pool.", float64(l.BlockSize))
	p.scalar("llmserve_kv_blocks_total", "gauge", "Blocks in the KV pool.", float64(l.Blocks))
	p.scalar("llmserve_kv_blocks_used", "gauge", "Blocks of the KV pool held by running requests.", float64(k.used))
	p.scalar("llmserve_kv_blocks_cached", "gauge", "Full blocks the prefix cache can hand to a new request.", float64(k.cached))
	p.scalar("llmserve_kv_evictions_total", "counter", "Cached blocks evicted, least recently used first, to make room.", float64(k.evictions))
	p.scalar("llmserve_prompt_tokens_cached_total", "counter", "Prompt tokens served from the prefix cache instead of computed.", float64(k.cachedPrompt))
	p.scalar("llmserve_kv_preemptions_total", "counter", "Requests preempted when the KV pool ran dry (recomputed when there was room).", float64(k.preemptions))
}
