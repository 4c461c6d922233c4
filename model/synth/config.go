package synth

import (
	"fmt"
	"slices"
)

// Config is the architecture and shape of a synthetic model.
type Config struct {
	Arch          string  // llama.cpp architecture name: llama, qwen2 or qwen3
	Name          string  // general.name
	ContextLength int     // {arch}.context_length
	Embedding     int     // model width
	Layers        int     // transformer blocks
	Heads         int     // query heads
	KVHeads       int     // key/value heads
	HeadDim       int     // per-head width of Q, K and V
	FFN           int     // feed-forward width
	RopeBase      float32 // rope.freq_base
	RMSEps        float32 // attention.layer_norm_rms_epsilon
	Tied          bool    // no output.weight: the output projection is token_embd.weight
	QKVBias       bool    // attn_q/k/v.bias tensors (qwen2)
	QKNorm        bool    // attn_q_norm/attn_k_norm per-head RMSNorm weights (qwen3)

	// RopeScaling, when set, adds a rope_freqs.weight tensor with llama3's
	// per-frequency divisors.
	RopeScaling *Llama3RopeScaling
}

// Llama3RopeScaling is the "llama3" rope_scaling of a Hugging Face config.
type Llama3RopeScaling struct {
	Factor          float64
	LowFreqFactor   float64
	HighFreqFactor  float64
	OriginalContext int
}

// llama31Scaling is the rope scaling of Llama 3.1 and 3.2.
var llama31Scaling = Llama3RopeScaling{Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalContext: 8192}

// Arches and ShapeNames list the accepted architecture and shape names.
var (
	Arches     = []string{"llama", "qwen2", "qwen3"}
	ShapeNames = []string{"tiny", "1b", "8b"}
)

// Shape returns the configuration of an architecture at a named shape (see
// the package documentation).
func Shape(arch, shape string) (Config, error) {
	if !slices.Contains(Arches, arch) {
		return Config{}, fmt.Errorf("synth: unknown architecture %q (want one of %v)", arch, Arches)
	}
	if !slices.Contains(ShapeNames, shape) {
		return Config{}, fmt.Errorf("synth: unknown shape %q (want one of %v)", shape, ShapeNames)
	}
	c := Config{Arch: arch, Name: "synth-" + arch + "-" + shape}
	switch arch {
	case "llama":
		scaling := llama31Scaling
		c.RopeBase, c.RMSEps, c.ContextLength, c.RopeScaling = 500000, 1e-5, 131072, &scaling
		switch shape {
		case "tiny":
			c.setDims(256, 4, 8, 4, 32, 768, true)
			c.ContextLength = 4096
		case "1b":
			c.setDims(2048, 16, 32, 8, 64, 8192, true)
		case "8b":
			c.setDims(4096, 32, 32, 8, 128, 14336, false)
		}
	case "qwen2":
		c.RopeBase, c.RMSEps, c.ContextLength, c.QKVBias = 1e6, 1e-6, 32768, true
		switch shape {
		case "tiny":
			c.setDims(256, 4, 8, 4, 32, 768, true)
			c.ContextLength = 4096
		case "1b":
			c.setDims(1536, 28, 12, 2, 128, 8960, true)
		case "8b":
			c.setDims(3584, 28, 28, 4, 128, 18944, false)
		}
	case "qwen3":
		c.RopeBase, c.RMSEps, c.ContextLength, c.QKNorm = 1e6, 1e-6, 40960, true
		switch shape {
		case "tiny":
			c.setDims(256, 4, 8, 4, 64, 768, true)
			c.ContextLength = 4096
		case "1b":
			c.setDims(2048, 28, 16, 8, 128, 6144, true)
		case "8b":
			c.setDims(4096, 36, 32, 8, 128, 12288, false)
		}
	}
	return c, nil
}

// setDims sets the sizes of c.
func (c *Config) setDims(embedding, layers, heads, kvHeads, headDim, ffn int, tied bool) {
	c.Embedding, c.Layers, c.Heads, c.KVHeads, c.HeadDim, c.FFN, c.Tied = embedding, layers, heads, kvHeads, headDim, ffn, tied
}

// Validate checks that the sizes are positive and consistent.
func (c *Config) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"embedding", c.Embedding}, {"layers", c.Layers}, {"heads", c.Heads}, {"KV heads", c.KVHeads},
		{"head dim", c.HeadDim}, {"feed-forward", c.FFN}, {"context length", c.ContextLength}} {
		if f.v <= 0 {
			return fmt.Errorf("synth: %s is %d", f.name, f.v)
		}
	}
	if c.Heads%c.KVHeads != 0 {
		return fmt.Errorf("synth: %d heads is not a multiple of %d KV heads", c.Heads, c.KVHeads)
	}
	if c.HeadDim%2 != 0 {
		return fmt.Errorf("synth: head dim %d is odd", c.HeadDim)
	}
	if !slices.Contains(Arches, c.Arch) {
		return fmt.Errorf("synth: unknown architecture %q", c.Arch)
	}
	return nil
}
