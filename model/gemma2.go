package model

import (
	"math"

	"llmserve/gguf"
)

// gemma2 scales the embeddings by √Embd, normalizes before and after both
// attention and feed-forward, soft-caps the attention logits and the final
// logits, attends through a sliding window on even blocks (llama.cpp's
// rule: block il uses it when il % 2 == 0), rotates neox-style and gates
// its feed-forward with GELU (tanh). The output is tied to token_embd.
func init() {
	register(&Arch{Name: "gemma2", Hparams: gemma2Hparams, Build: buildGemma2})
}

func gemma2Hparams(f *gguf.File, c *Config) error {
	p := c.Arch.Name + "."
	for _, k := range []struct {
		key string
		dst *float32
	}{
		{"attn_logit_softcapping", &c.AttnSoftcap},
		{"final_logit_softcapping", &c.FinalSoftcap},
		{"attention.scale", &c.AttnScale},
	} {
		if err := optFloat(f, p+k.key, k.dst); err != nil {
			return err
		}
	}
	if c.AttnScale == 0 && c.Layers == 46 {
		// Gemma-2-27B scales queries by its query_pre_attn_scalar,
		// Embd/Heads rather than HeadDim, as llama.cpp does from the size.
		c.AttnScale = float32(1 / math.Sqrt(float64(c.Embd/c.Heads)))
	}
	return nil
}

func buildGemma2(c *Config) Graph {
	g := Graph{
		Globals: []TensorID{TokEmbd, OutputNorm, Output},
		Input:   []Step{{Op: OpScale, Name: "inp_scaled", In: BufX, Out: BufX, Scale: float32(math.Sqrt(float64(c.Embd)))}},
		Output:  output(c),
	}
	if c.FinalSoftcap > 0 {
		g.Output = append(g.Output, Step{Op: OpSoftCap, Name: "result_output_capped", In: BufLogits, Out: BufLogits, Cap: c.FinalSoftcap})
	}
	for l := range c.Layers {
		window := 0
		if l%2 == 0 {
			window = c.SlidingWindow
		}
		b := block{c: c}
		b.norm("attn_norm", AttnNorm, BufX, BufCur)
		b.qkv(false)
		b.rope(true)
		b.attention(c.AttnScale, c.AttnSoftcap, window)
		b.norm("attn_post_norm", AttnPostNorm, BufCur, BufCur)
		b.residual("sa_out", BufCur)
		b.norm("ffn_norm", FFNNorm, BufX, BufCur)
		b.ffn(ActGELUTanh)
		b.norm("ffn_post_norm", FFNPostNorm, BufCur, BufCur)
		b.residual("l_out", BufCur)
		g.Blocks = append(g.Blocks, b.steps)
	}
	return g
}
