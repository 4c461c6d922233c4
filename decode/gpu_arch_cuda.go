//go:build cuda

package decode

import (
	"fmt"
	"math"
	"slices"

	"llmserve/model"
)

// gpuSupports refuses a model whose forward pass has steps the GPU
// engine's fused layer (gpu_step_cuda.go) does not compute: it runs the
// llama block (attn_norm, Q/K/V with optional biases and per-head norms,
// RoPE, plain causal attention, attn_output, ffn_norm, SwiGLU, ffn_down)
// and nothing else yet.
func gpuSupports(m *model.Model) error {
	refuse := func(what string) error {
		return fmt.Errorf("%s: %s: %w by the GPU engine", m.Arch.Name, what, model.ErrUnsupported)
	}
	if len(m.Graph.Input) > 0 {
		return refuse("input step " + m.Graph.Input[0].Name)
	}
	out := m.Graph.Output
	if len(out) != 2 || out[0].Op != model.OpNorm || out[1].Op != model.OpMatMul {
		return refuse("output steps")
	}
	if m.RopeAttnFactor != 1 || m.Tensors[model.RopeFactorsLong] != nil || m.Tensors[model.RopeFactorsShort] != nil {
		return refuse("LongRoPE")
	}
	norms := []model.TensorID{model.AttnNorm, model.FFNNorm, model.AttnQNorm, model.AttnKNorm}
	mats := []model.TensorID{model.AttnQ, model.AttnK, model.AttnV, model.AttnOut, model.FFNGate, model.FFNUp, model.FFNDown}
	scale := float32(1 / math.Sqrt(float64(m.HeadDim)))
	for l, b := range m.Graph.Blocks {
		for _, s := range b {
			ok := true
			switch s.Op {
			case model.OpNorm:
				ok = slices.Contains(norms, s.W)
			case model.OpMatMul:
				ok = slices.Contains(mats, s.W)
			case model.OpRope, model.OpAdd:
			case model.OpAttention:
				ok = s.Cap == 0 && s.Window == 0 && s.Scale == scale
			case model.OpGLU:
				ok = s.Act == model.ActSiLU && s.In2 != model.NoBuf
			default:
				ok = false
			}
			if !ok {
				return refuse(fmt.Sprintf("step blk.%d.%s (%v)", l, s.Name, s.Op))
			}
		}
	}
	return nil
}
