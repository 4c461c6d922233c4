package model

import (
	"fmt"
	"math"
)

// Bounds on hyperparameters. They are far above every released model and
// keep every product of two of them inside an int, so that sizes computed
// from a Config never wrap around.
const (
	maxWidth     = 1 << 20 // embedding and feed-forward widths, head counts
	maxHeadDim   = 1 << 16 // width of one head
	maxQKVWidth  = 1 << 24 // Heads·HeadDim and KVHeads·HeadDim
	maxContext   = 1 << 24 // trained context length
	maxVocab     = 1 << 24 // rows of token_embd
	maxRMSEps    = 1       // an epsilon this large is not a small constant any more
	maxRopeBase  = 1e12    // above this every rotation is ~0 and the file is corrupt
	maxRopeScale = 1 << 16 // linear rope scaling factor
	maxExperts   = 1 << 12 // experts of a mixture
)

// finite reports whether x is neither NaN nor infinite.
func finite(x float32) bool {
	return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0)
}

// check verifies that the hyperparameters are finite, positive, in range
// and consistent with each other, so that an engine built from them never
// divides by zero, indexes out of range or computes NaN from the metadata
// alone.
func (c *Config) check() error {
	switch {
	case c.KVHeads < 1 || c.KVHeads > c.Heads:
		return fmt.Errorf("%d KV heads is not in [1, %d heads]", c.KVHeads, c.Heads)
	case c.Heads%c.KVHeads != 0:
		return fmt.Errorf("%d heads is not a multiple of %d KV heads", c.Heads, c.KVHeads)
	case c.HeadDim < 2 || c.HeadDim > maxHeadDim || c.HeadDim%2 != 0:
		return fmt.Errorf("head dimension %d is not even and in [2, %d]", c.HeadDim, maxHeadDim)
	case int64(c.Heads)*int64(c.HeadDim) > maxQKVWidth:
		return fmt.Errorf("%d heads of %d values is wider than %d", c.Heads, c.HeadDim, maxQKVWidth)
	case c.RopeDim <= 0 || c.RopeDim > c.HeadDim || c.RopeDim%2 != 0:
		return fmt.Errorf("rope dimension %d does not fit head dimension %d", c.RopeDim, c.HeadDim)
	case c.CtxTrain < 1 || c.CtxTrain > maxContext:
		return fmt.Errorf("context length %d is not in [1, %d]", c.CtxTrain, maxContext)
	case !finite(c.RMSEps) || c.RMSEps <= 0 || c.RMSEps > maxRMSEps:
		return fmt.Errorf("RMS epsilon %g is not in (0, %d]", c.RMSEps, maxRMSEps)
	case !finite(c.RopeBase) || c.RopeBase <= 1 || c.RopeBase > maxRopeBase:
		return fmt.Errorf("rope frequency base %g is not in (1, %g]", c.RopeBase, float32(maxRopeBase))
	case !finite(c.RopeScale) || c.RopeScale <= 0:
		return fmt.Errorf("rope position scale %g is not positive", c.RopeScale)
	case !finite(c.RopeAttnFactor) || c.RopeAttnFactor <= 0 || c.RopeAttnFactor > maxRopeScale:
		return fmt.Errorf("rope attention factor %g is not in (0, %d]", c.RopeAttnFactor, maxRopeScale)
	case c.Experts > maxExperts:
		return fmt.Errorf("%d experts is more than %d", c.Experts, maxExperts)
	case c.Experts > 0 && (c.ExpertsUsed < 1 || c.ExpertsUsed > c.Experts):
		return fmt.Errorf("%d experts used per token is not in [1, %d experts]", c.ExpertsUsed, c.Experts)
	case c.Experts == 0 && c.ExpertsUsed != 0:
		return fmt.Errorf("%d experts used per token without expert_count", c.ExpertsUsed)
	case !finite(c.AttnScale) || c.AttnScale < 0:
		return fmt.Errorf("attention scale %g is not finite and non-negative", c.AttnScale)
	case !finite(c.AttnSoftcap) || c.AttnSoftcap < 0, !finite(c.FinalSoftcap) || c.FinalSoftcap < 0:
		return fmt.Errorf("soft-capping %g / %g is not finite and non-negative", c.AttnSoftcap, c.FinalSoftcap)
	}
	return nil
}

// minTensorsPerLayer is the fewest tensors any architecture's block holds
// (phi3: attn_norm, attn_qkv, attn_output, ffn_norm, ffn_up, ffn_down); it
// bounds the block count by the file's tensor count before a pass is built.
const minTensorsPerLayer = 6

// check verifies that the pass only reads what the hyperparameters give:
// an expert mixture needs a MoE step, and every step's buffers exist.
func (g *Graph) check(c *Config) error {
	if len(g.Blocks) != c.Layers {
		return fmt.Errorf("%d blocks built for %d layers", len(g.Blocks), c.Layers)
	}
	moe := false
	for _, b := range g.Blocks {
		for _, s := range b {
			moe = moe || s.Op == OpMoE
		}
	}
	if c.Experts > 0 && !moe {
		return fmt.Errorf("%d experts: %w for this architecture", c.Experts, ErrUnsupported)
	}
	return nil
}
