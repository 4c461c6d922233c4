package model

import (
	"errors"
	"fmt"

	"llmserve/gguf"
)

// readConfig reads the hyperparameters under the "{arch}." metadata prefix.
func readConfig(f *gguf.File, arch *Arch) (Config, error) {
	c := Config{Arch: arch, RopeBase: 10000, RopeScale: 1, RopeAttnFactor: 1}
	c.Name, _ = f.String("general.name")
	p := arch.Name + "."
	required := []struct {
		key string
		dst *int
	}{
		{"embedding_length", &c.Embd},
		{"block_count", &c.Layers},
		{"attention.head_count", &c.Heads},
		{"feed_forward_length", &c.FFN},
	}
	for _, r := range required {
		v, err := f.Uint32(p + r.key)
		if err != nil {
			return c, err
		}
		if v == 0 || v > maxWidth {
			return c, fmt.Errorf("%s%s = %d is out of range", p, r.key, v)
		}
		*r.dst = int(v)
	}
	if _, err := f.Value(p + "attention.key_length"); errors.Is(err, gguf.ErrKeyNotFound) && c.Embd%c.Heads != 0 {
		return c, fmt.Errorf("%sembedding_length %d is not a multiple of %d heads and %sattention.key_length is absent", p, c.Embd, c.Heads, p)
	}
	optional := []struct {
		key string
		dst *int
		def int
	}{
		{"attention.head_count_kv", &c.KVHeads, c.Heads},
		{"attention.key_length", &c.HeadDim, c.Embd / c.Heads},
		{"context_length", &c.CtxTrain, 2048},
	}
	for _, o := range optional {
		v, err := f.Uint32(p + o.key)
		switch {
		case errors.Is(err, gguf.ErrKeyNotFound):
			*o.dst = o.def
		case err != nil:
			return c, err
		case v == 0 || v > maxContext:
			return c, fmt.Errorf("%s%s = %d is out of range", p, o.key, v)
		default:
			*o.dst = int(v)
		}
	}
	if vl, err := f.Uint32(p + "attention.value_length"); err == nil {
		if int(vl) != c.HeadDim {
			return c, fmt.Errorf("%sattention.value_length = %d differs from the key length %d", p, vl, c.HeadDim)
		}
	} else if !errors.Is(err, gguf.ErrKeyNotFound) {
		return c, err
	}
	rd, err := f.Uint32(p + "rope.dimension_count")
	switch {
	case errors.Is(err, gguf.ErrKeyNotFound):
		c.RopeDim = c.HeadDim
	case err != nil:
		return c, err
	default:
		c.RopeDim = int(rd)
	}
	eps, err := f.Float32(p + "attention.layer_norm_rms_epsilon")
	if err != nil {
		return c, err
	}
	c.RMSEps = eps
	if base, err := f.Float32(p + "rope.freq_base"); err == nil {
		c.RopeBase = base
	} else if !errors.Is(err, gguf.ErrKeyNotFound) {
		return c, err
	}
	if err := readRopeScaling(f, p, &c); err != nil {
		return c, err
	}
	counts := []struct {
		key string
		dst *int
	}{
		{"expert_count", &c.Experts},
		{"expert_used_count", &c.ExpertsUsed},
		{"attention.sliding_window", &c.SlidingWindow},
		{"rope.scaling.original_context_length", &c.RopeOrigCtx},
	}
	for _, o := range counts {
		v, err := f.Uint32(p + o.key)
		switch {
		case errors.Is(err, gguf.ErrKeyNotFound):
		case err != nil:
			return c, err
		case v > maxContext:
			return c, fmt.Errorf("%s%s = %d is out of range", p, o.key, v)
		default:
			*o.dst = int(v)
		}
	}
	if err := optFloat(f, p+"rope.scaling.attn_factor", &c.RopeAttnFactor); err != nil {
		return c, err
	}
	if arch.Hparams != nil {
		if err := arch.Hparams(f, &c); err != nil {
			return c, err
		}
	}
	return c, c.check()
}

// optFloat reads the float key into dst when the file has it.
func optFloat(f *gguf.File, key string, dst *float32) error {
	v, err := f.Float32(key)
	switch {
	case errors.Is(err, gguf.ErrKeyNotFound):
		return nil
	case err != nil:
		return err
	}
	*dst = v
	return nil
}

// readRopeScaling applies "linear" position scaling; "none" and llama3's
// scaling (carried by the rope_freqs tensor) need nothing here.
func readRopeScaling(f *gguf.File, p string, c *Config) error {
	typ, err := f.String(p + "rope.scaling.type")
	if errors.Is(err, gguf.ErrKeyNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	switch typ {
	case "none", "llama3":
		return nil
	case "linear":
		factor, err := f.Float32(p + "rope.scaling.factor")
		if err != nil {
			return err
		}
		if !finite(factor) || factor <= 0 || factor > maxRopeScale {
			return fmt.Errorf("%srope.scaling.factor = %g is not in (0, %g]", p, factor, float32(maxRopeScale))
		}
		c.RopeScale = 1 / factor
		return nil
	}
	return fmt.Errorf("rope scaling %q: %w", typ, ErrUnsupported)
}
