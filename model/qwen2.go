package model

// qwen2 is llama with biases on Q, K and V and neox-style RoPE.
func init() {
	register(&Arch{Name: "qwen2", Build: buildLlama(llamaOptions{neox: true, qkvBias: true})})
}
