package model

// llama covers Llama 1/2/3/3.1/3.2, Mistral and TinyLlama: plain RMSNorm
// pre-norm blocks, GQA attention with interleaved RoPE (llama3 scaling
// through rope_freqs) and a SwiGLU feed-forward.
func init() { register(Arch{Name: "llama"}) }
