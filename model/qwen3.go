package model

// qwen3 is llama with neox-style RoPE and a per-head RMSNorm on Q and K
// (attn_q_norm, attn_k_norm) before RoPE; it has no Q/K/V biases.
func init() {
	register(&Arch{Name: "qwen3", Build: buildLlama(llamaOptions{neox: true, qkNorm: true})})
}
