package httpapi

// metricsGolden is /metrics for goldenHTTP and goldenSnapshot as written
// by the renderer before it moved from decode to httpapi: every name,
// type, help text and label must stay as it is.
const metricsGolden = `# HELP llmserve_http_requests_total HTTP responses, by status code.
# TYPE llmserve_http_requests_total counter
llmserve_http_requests_total{code="200"} 10
llmserve_http_requests_total{code="400"} 2
llmserve_http_requests_total{code="404"} 1
llmserve_http_requests_total{code="500"} 1
# HELP llmserve_http_panics_total Handlers that panicked (each answered 500).
# TYPE llmserve_http_panics_total counter
llmserve_http_panics_total 1
# HELP llmserve_http_open_connections HTTP connections open now.
# TYPE llmserve_http_open_connections gauge
llmserve_http_open_connections 3
# HELP go_goroutines Goroutines that currently exist.
# TYPE go_goroutines gauge
go_goroutines 2
# HELP llmserve_requests_finished_total Requests ended, by outcome.
# TYPE llmserve_requests_finished_total counter
llmserve_requests_finished_total{outcome="cancelled"} 1
llmserve_requests_finished_total{outcome="error"} 1
llmserve_requests_finished_total{outcome="length"} 2
llmserve_requests_finished_total{outcome="stop"} 1
# HELP llmserve_requests_rejected_total Requests refused at submission, by reason.
# TYPE llmserve_requests_rejected_total counter
llmserve_requests_rejected_total{reason="queue_full"} 2
llmserve_requests_rejected_total{reason="too_long"} 1
# HELP llmserve_prompt_tokens_total Prompt tokens of admitted requests.
# TYPE llmserve_prompt_tokens_total counter
llmserve_prompt_tokens_total 127
# HELP llmserve_generated_tokens_total Tokens generated.
# TYPE llmserve_generated_tokens_total counter
llmserve_generated_tokens_total 9
# HELP llmserve_prompt_tokens_shared_total Prompt tokens of a choice copied from another choice's KV cache instead of computed.
# TYPE llmserve_prompt_tokens_shared_total counter
llmserve_prompt_tokens_shared_total 33
# HELP llmserve_panics_total Panics recovered while serving; each ended its request, or the requests of its step, with an internal error.
# TYPE llmserve_panics_total counter
llmserve_panics_total 1
# HELP llmserve_queue_depth Requests waiting for a slot.
# TYPE llmserve_queue_depth gauge
llmserve_queue_depth 4
# HELP llmserve_slots_busy Sequence slots in use.
# TYPE llmserve_slots_busy gauge
llmserve_slots_busy 3
# HELP llmserve_slots_total Sequence slots in all.
# TYPE llmserve_slots_total gauge
llmserve_slots_total 8
# HELP llmserve_time_to_first_token_seconds Time from submission to the first generated token.
# TYPE llmserve_time_to_first_token_seconds histogram
llmserve_time_to_first_token_seconds_bucket{le="0.005"} 1
llmserve_time_to_first_token_seconds_bucket{le="0.01"} 1
llmserve_time_to_first_token_seconds_bucket{le="0.025"} 1
llmserve_time_to_first_token_seconds_bucket{le="0.05"} 2
llmserve_time_to_first_token_seconds_bucket{le="0.1"} 2
llmserve_time_to_first_token_seconds_bucket{le="0.25"} 2
llmserve_time_to_first_token_seconds_bucket{le="0.5"} 2
llmserve_time_to_first_token_seconds_bucket{le="1"} 3
llmserve_time_to_first_token_seconds_bucket{le="2.5"} 3
llmserve_time_to_first_token_seconds_bucket{le="5"} 3
llmserve_time_to_first_token_seconds_bucket{le="10"} 3
llmserve_time_to_first_token_seconds_bucket{le="30"} 3
llmserve_time_to_first_token_seconds_bucket{le="+Inf"} 4
llmserve_time_to_first_token_seconds_sum 45.743
llmserve_time_to_first_token_seconds_count 4
# HELP llmserve_inter_token_latency_seconds Time between consecutive tokens of a request.
# TYPE llmserve_inter_token_latency_seconds histogram
llmserve_inter_token_latency_seconds_bucket{le="0.001"} 1
llmserve_inter_token_latency_seconds_bucket{le="0.0025"} 3
llmserve_inter_token_latency_seconds_bucket{le="0.005"} 3
llmserve_inter_token_latency_seconds_bucket{le="0.01"} 3
llmserve_inter_token_latency_seconds_bucket{le="0.025"} 3
llmserve_inter_token_latency_seconds_bucket{le="0.05"} 4
llmserve_inter_token_latency_seconds_bucket{le="0.1"} 4
llmserve_inter_token_latency_seconds_bucket{le="0.25"} 4
llmserve_inter_token_latency_seconds_bucket{le="0.5"} 4
llmserve_inter_token_latency_seconds_bucket{le="1"} 4
llmserve_inter_token_latency_seconds_bucket{le="+Inf"} 5
llmserve_inter_token_latency_seconds_sum 3.0345
llmserve_inter_token_latency_seconds_count 5
# HELP llmserve_kv_bytes_per_token KV cache bytes one token takes over all layers (f16 keys, q8_0 values).
# TYPE llmserve_kv_bytes_per_token gauge
llmserve_kv_bytes_per_token 17248
# HELP llmserve_kv_bytes_per_slot KV cache bytes of one request at the full context.
# TYPE llmserve_kv_bytes_per_slot gauge
llmserve_kv_bytes_per_slot 3.5323904e+07
# HELP llmserve_kv_pool_bytes Bytes of the paged KV pool.
# TYPE llmserve_kv_pool_bytes gauge
llmserve_kv_pool_bytes 1.41295616e+08
# HELP llmserve_kv_block_tokens Tokens per block of the KV pool.
# TYPE llmserve_kv_block_tokens gauge
llmserve_kv_block_tokens 16
# HELP llmserve_kv_blocks_total Blocks in the KV pool.
# TYPE llmserve_kv_blocks_total gauge
llmserve_kv_blocks_total 512
# HELP llmserve_kv_blocks_used Blocks of the KV pool held by running requests.
# TYPE llmserve_kv_blocks_used gauge
llmserve_kv_blocks_used 40
# HELP llmserve_kv_blocks_cached Full blocks the prefix cache can hand to a new request.
# TYPE llmserve_kv_blocks_cached gauge
llmserve_kv_blocks_cached 12
# HELP llmserve_kv_evictions_total Cached blocks evicted, least recently used first, to make room.
# TYPE llmserve_kv_evictions_total counter
llmserve_kv_evictions_total 9
# HELP llmserve_prompt_tokens_cached_total Prompt tokens served from the prefix cache instead of computed.
# TYPE llmserve_prompt_tokens_cached_total counter
llmserve_prompt_tokens_cached_total 64
# HELP llmserve_kv_preemptions_total Requests preempted when the KV pool ran dry (recomputed when there was room).
# TYPE llmserve_kv_preemptions_total counter
llmserve_kv_preemptions_total 2
# HELP llmserve_cuda_graph_captures_total CUDA graphs captured and instantiated.
# TYPE llmserve_cuda_graph_captures_total counter
llmserve_cuda_graph_captures_total 7
# HELP llmserve_cuda_graph_replays_total Steps run by replaying a CUDA graph.
# TYPE llmserve_cuda_graph_replays_total counter
llmserve_cuda_graph_replays_total 1234
# HELP llmserve_cuda_graph_param_updates_total Kernel-node parameter updates before replays.
# TYPE llmserve_cuda_graph_param_updates_total counter
llmserve_cuda_graph_param_updates_total 3
# HELP llmserve_cuda_graph_fallbacks_total Graph captures or instantiations that failed (their batch size runs eagerly).
# TYPE llmserve_cuda_graph_fallbacks_total counter
llmserve_cuda_graph_fallbacks_total 1
# HELP llmserve_cuda_eager_steps_total Steps run by launching kernels one by one.
# TYPE llmserve_cuda_eager_steps_total counter
llmserve_cuda_eager_steps_total 56
`
