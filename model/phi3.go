package model

// phi3 (Phi-3, Phi-3.5) computes Q, K and V in one product (attn_qkv) and
// gate and up in one (ffn_up, gate rows first), rotates neox-style with
// LongRoPE factors when the file has them (rope_factors_long beyond the
// original context, rope_factors_short within it) and attends through
// its sliding window on every block.
func init() { register(&Arch{Name: "phi3", Build: buildPhi3}) }

func buildPhi3(c *Config) Graph {
	g := Graph{Globals: []TensorID{TokEmbd, OutputNorm, Output, RopeFactorsLong, RopeFactorsShort}, Output: output(c)}
	for range c.Layers {
		b := block{c: c}
		b.norm("attn_norm", AttnNorm, BufX, BufCur)
		b.fusedQKV()
		b.rope(true)
		b.attention(0, 0, c.SlidingWindow)
		b.residual("ffn_inp", BufCur)
		b.norm("ffn_norm", FFNNorm, BufX, BufCur)
		b.fusedFFN(ActSiLU)
		b.residual("l_out", BufCur)
		g.Blocks = append(g.Blocks, b.steps)
	}
	return g
}
