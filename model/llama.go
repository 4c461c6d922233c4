package model

// llama covers Llama 1/2/3/3.1/3.2, Mistral, TinyLlama and Mixtral-style
// mixtures of experts (llama with expert_count): plain RMSNorm pre-norm
// blocks, GQA attention with interleaved RoPE (llama3 scaling through
// rope_freqs) and a SwiGLU feed-forward or, with experts, a routed one.
func init() { register(&Arch{Name: "llama", Build: buildLlama(llamaOptions{})}) }

// llamaOptions are the variations of the llama block that qwen2 and qwen3
// are.
type llamaOptions struct {
	neox    bool // neox-style RoPE
	qkvBias bool // biases on Q, K and V
	qkNorm  bool // per-head RMSNorm of Q and K before RoPE
}

func buildLlama(o llamaOptions) func(c *Config) Graph {
	return func(c *Config) Graph {
		g := Graph{Globals: []TensorID{TokEmbd, OutputNorm, Output, RopeFreqs}, Output: output(c)}
		for range c.Layers {
			b := block{c: c}
			b.norm("attn_norm", AttnNorm, BufX, BufCur)
			b.qkv(o.qkvBias)
			if o.qkNorm {
				b.norm("Qcur_normed", AttnQNorm, BufQ, BufQ)
				b.norm("Kcur_normed", AttnKNorm, BufK, BufK)
			}
			b.rope(o.neox)
			b.attention(0, 0, 0)
			b.residual("ffn_inp", BufCur)
			b.norm("ffn_norm", FFNNorm, BufX, BufCur)
			if c.Experts > 0 {
				b.moe(ActSiLU)
			} else {
				b.ffn(ActSiLU)
			}
			b.residual("l_out", BufCur)
			g.Blocks = append(g.Blocks, b.steps)
		}
		return g
	}
}
