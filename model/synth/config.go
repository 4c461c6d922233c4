package synth

import (
	"fmt"
	"math"
	"slices"
)

// Config is the architecture and shape of a synthetic model.
type Config struct {
	Arch          string  // llama.cpp architecture name: llama, qwen2, qwen3, gemma2 or phi3
	Name          string  // general.name (see modelName)
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
	Experts       int     // expert_count (a Mixtral-style llama), 0 = dense
	ExpertsUsed   int     // expert_used_count
	SlidingWindow int     // attention.sliding_window, 0 = none
	AttnSoftcap   float32 // attn_logit_softcapping (gemma2), 0 = none
	FinalSoftcap  float32 // final_logit_softcapping (gemma2), 0 = none

	// RopeScaling, when set, adds a rope_freqs.weight tensor with llama3's
	// per-frequency divisors.
	RopeScaling *Llama3RopeScaling
	// LongRope, when set, adds phi3's rope_factors_long/short tensors.
	LongRope *LongRopeScaling
}

// LongRopeScaling is Phi-3's "longrope" rope_scaling: the context it
// extends and the factor of the longest wavelengths.
type LongRopeScaling struct {
	Factor          float64
	OriginalContext int
}

// attnFactor is the scale of the rotated values LongRoPE implies:
// √(1 + ln(context/original)/ln(original)).
func (s *LongRopeScaling) attnFactor(context int) float32 {
	r := float64(context) / float64(s.OriginalContext)
	if r <= 1 {
		return 1
	}
	return float32(math.Sqrt(1 + math.Log(r)/math.Log(float64(s.OriginalContext))))
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

// Arches lists the accepted architecture names (mixtral is a llama with
// experts) and Shapes the shape names of each.
var (
	Arches = []string{"llama", "qwen2", "qwen3", "gemma2", "phi3", "mixtral"}
	Shapes = map[string][]string{
		"llama": {"tiny", "1b", "8b"}, "qwen2": {"tiny", "1b", "8b"}, "qwen3": {"tiny", "1b", "8b"},
		"gemma2": {"tiny", "2b", "9b"}, "phi3": {"tiny", "mini"}, "mixtral": {"tiny", "8x7b"},
	}
)

// fileArch is the general.architecture a synth architecture writes.
func fileArch(arch string) string {
	if arch == "mixtral" {
		return "llama"
	}
	return arch
}

// Shape returns the configuration of an architecture at a named shape (see
// the package documentation).
func Shape(arch, shape string) (Config, error) {
	if !slices.Contains(Arches, arch) {
		return Config{}, fmt.Errorf("synth: unknown architecture %q (want one of %v)", arch, Arches)
	}
	if !slices.Contains(Shapes[arch], shape) {
		return Config{}, fmt.Errorf("synth: unknown shape %q for %s (want one of %v)", shape, arch, Shapes[arch])
	}
	c := Config{Arch: fileArch(arch), Name: modelName(arch, shape)}
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
		c.RopeBase, c.RMSEps, c.ContextLength = 1e6, 1e-6, 32768
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
		c.RopeBase, c.RMSEps, c.ContextLength = 1e6, 1e-6, 40960
		switch shape {
		case "tiny":
			c.setDims(256, 4, 8, 4, 64, 768, true)
			c.ContextLength = 4096
		case "1b":
			c.setDims(2048, 28, 16, 8, 128, 6144, true)
		case "8b":
			c.setDims(4096, 36, 32, 8, 128, 12288, false)
		}
	case "gemma2":
		c.RopeBase, c.RMSEps, c.ContextLength = 10000, 1e-6, 8192
		c.SlidingWindow, c.AttnSoftcap, c.FinalSoftcap = 4096, 50, 30
		switch shape {
		case "tiny":
			c.setDims(256, 4, 4, 2, 64, 768, true)
			c.ContextLength, c.SlidingWindow = 4096, 64
		case "2b":
			c.setDims(2304, 26, 8, 4, 256, 9216, true)
		case "9b":
			c.setDims(3584, 42, 16, 8, 256, 14336, true)
		}
	case "phi3":
		c.RopeBase, c.RMSEps, c.ContextLength = 10000, 1e-5, 131072
		c.SlidingWindow, c.LongRope = 262144, &LongRopeScaling{Factor: 32, OriginalContext: 4096}
		switch shape {
		case "tiny":
			c.setDims(256, 4, 8, 8, 32, 768, false)
			c.ContextLength, c.SlidingWindow, c.LongRope = 4096, 2047, nil
		case "mini":
			c.setDims(3072, 32, 32, 32, 96, 8192, false)
		}
	case "mixtral":
		c.RopeBase, c.RMSEps, c.ContextLength = 1e6, 1e-5, 32768
		c.Experts, c.ExpertsUsed = 8, 2
		switch shape {
		case "tiny":
			c.setDims(256, 4, 8, 4, 32, 512, true)
			c.ContextLength, c.Experts = 4096, 4
		case "8x7b":
			c.setDims(4096, 32, 32, 8, 128, 14336, false)
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
	if c.Arch == "mixtral" || !slices.Contains(Arches, c.Arch) {
		return fmt.Errorf("synth: unknown architecture %q", c.Arch)
	}
	if c.Experts < 0 || c.ExpertsUsed < 0 || (c.Experts > 0) != (c.ExpertsUsed > 0) || c.ExpertsUsed > c.Experts {
		return fmt.Errorf("synth: %d of %d experts per token", c.ExpertsUsed, c.Experts)
	}
	return nil
}
