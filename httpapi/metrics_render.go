package httpapi

import (
	"io"
	"strconv"

	"llmserve/decode"
)

// writeSchedulerMetrics renders the scheduler's counters (and the KV pool's
// and CUDA graphs' figures it carries) in the Prometheus text format.
func writeSchedulerMetrics(w io.Writer, m decode.MetricsSnapshot) error {
	p := &promWriter{w: w}
	p.labeled("llmserve_requests_finished_total", "counter", "Requests ended, by outcome.", "outcome", m.Finished)
	p.labeled("llmserve_requests_rejected_total", "counter", "Requests refused at submission, by reason.", "reason", m.Rejected)
	p.scalar("llmserve_prompt_tokens_total", "counter", "Prompt tokens of admitted requests.", float64(m.PromptTokens))
	p.scalar("llmserve_generated_tokens_total", "counter", "Tokens generated.", float64(m.GeneratedTokens))
	p.scalar("llmserve_prompt_tokens_shared_total", "counter", "Prompt tokens of a choice copied from another choice's KV cache instead of computed.", float64(m.SharedPrompt))
	p.scalar("llmserve_panics_total", "counter", "Panics recovered while serving; each ended its request, or the requests of its step, with an internal error.", float64(m.Panics))
	p.scalar("llmserve_queue_depth", "gauge", "Requests waiting for a slot.", float64(m.Queued))
	p.scalar("llmserve_slots_busy", "gauge", "Sequence slots in use.", float64(m.BusySlot))
	p.scalar("llmserve_slots_total", "gauge", "Sequence slots in all.", float64(m.Slots))
	p.histogram("llmserve_time_to_first_token_seconds", "Time from submission to the first generated token.", m.TTFT)
	p.histogram("llmserve_inter_token_latency_seconds", "Time between consecutive tokens of a request.", m.ITL)
	writeKVMetrics(p, m)
	if m.Graphs != nil {
		writeGraphMetrics(p, *m.Graphs)
	}
	return p.err
}

// writeKVMetrics renders the paged KV pool's figures, when there is a pool.
func writeKVMetrics(p *promWriter, m decode.MetricsSnapshot) {
	if !m.KVPaged {
		return
	}
	l := m.KVLayout
	p.scalar("llmserve_kv_bytes_per_token", "gauge", "KV cache bytes one token takes over all layers ("+l.K.String()+" keys, "+l.V.String()+" values).", float64(l.BytesPerToken()))
	p.scalar("llmserve_kv_bytes_per_slot", "gauge", "KV cache bytes of one request at the full context.", float64(l.BytesPerToken()*int64(m.KVContext)))
	p.scalar("llmserve_kv_pool_bytes", "gauge", "Bytes of the paged KV pool.", float64(l.PoolBytes()))
	p.scalar("llmserve_kv_block_tokens", "gauge", "Tokens per block of the KV pool.", float64(l.BlockSize))
	p.scalar("llmserve_kv_blocks_total", "gauge", "Blocks in the KV pool.", float64(l.Blocks))
	p.scalar("llmserve_kv_blocks_used", "gauge", "Blocks of the KV pool held by running requests.", float64(m.KVBlocksUsed))
	p.scalar("llmserve_kv_blocks_cached", "gauge", "Full blocks the prefix cache can hand to a new request.", float64(m.KVBlocksCached))
	p.scalar("llmserve_kv_evictions_total", "counter", "Cached blocks evicted, least recently used first, to make room.", float64(m.KVEvictions))
	p.scalar("llmserve_prompt_tokens_cached_total", "counter", "Prompt tokens served from the prefix cache instead of computed.", float64(m.CachedPrompt))
	p.scalar("llmserve_kv_preemptions_total", "counter", "Requests preempted when the KV pool ran dry (recomputed when there was room).", float64(m.Preemptions))
}

// writeGraphMetrics renders the CUDA graph totals, each followed by its
// figure per graph bucket (label bucket="<size>") where there is one,
// then the families that exist per bucket only.
func writeGraphMetrics(p *promWriter, g decode.GraphStats) {
	perBucket := func(name string, v func(decode.BucketStats) float64) {
		for _, b := range g.Buckets {
			p.sample(name, "bucket", strconv.Itoa(b.Size), v(b))
		}
	}
	p.scalar("llmserve_cuda_graph_captures_total", "counter", "CUDA graphs captured and instantiated.", float64(g.Captures))
	p.scalar("llmserve_cuda_graph_replays_total", "counter", "Steps run by replaying a CUDA graph.", float64(g.Replays))
	perBucket("llmserve_cuda_graph_replays_total", func(b decode.BucketStats) float64 { return float64(b.Replays) })
	p.scalar("llmserve_cuda_graph_param_updates_total", "counter", "Kernel-node parameter updates before replays.", float64(g.ParamUpdates))
	p.scalar("llmserve_cuda_graph_fallbacks_total", "counter", "Graph captures or instantiations that failed (their batch size runs eagerly).", float64(g.Fallbacks))
	p.scalar("llmserve_cuda_eager_steps_total", "counter", "Steps run by launching kernels one by one.", float64(g.EagerSteps))
	perBucket("llmserve_cuda_eager_steps_total", func(b decode.BucketStats) float64 { return float64(b.EagerSteps) })
	if len(g.Buckets) == 0 {
		return
	}
	for _, f := range []struct {
		name, typ, help string
		v               func(decode.BucketStats) float64
	}{
		{"llmserve_cuda_graph_real_tokens_total", "counter", "Tokens of requests in steps padded to the bucket's size (replayed or eager).",
			func(b decode.BucketStats) float64 { return float64(b.RealTokens) }},
		{"llmserve_cuda_graph_padded_tokens_total", "counter", "Padding tokens that filled steps to the bucket's size.",
			func(b decode.BucketStats) float64 { return float64(b.PaddedTokens) }},
		{"llmserve_cuda_graph_nodes", "gauge", "Nodes of the bucket's CUDA graph (0 before its capture or when it failed).",
			func(b decode.BucketStats) float64 { return float64(b.Nodes) }},
		{"llmserve_cuda_graph_capture_seconds", "gauge", "Time the capture of the bucket's CUDA graph took.",
			func(b decode.BucketStats) float64 { return b.Capture.Seconds() }},
		{"llmserve_cuda_graph_instantiate_seconds", "gauge", "Time the instantiation of the bucket's CUDA graph took.",
			func(b decode.BucketStats) float64 { return b.Instantiate.Seconds() }},
	} {
		p.header(f.name, f.typ, f.help)
		perBucket(f.name, f.v)
	}
}
