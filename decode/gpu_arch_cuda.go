//go:build cuda

package decode

import (
	"fmt"
	"math"
	"slices"

	"llmserve/kernels"
	"llmserve/model"
)

// gpuSupports refuses a model whose forward pass the GPU engine cannot
// run: neither its fused llama layer (gpuFuses) nor the executor of the
// description (gpuExecutes) takes it.
func gpuSupports(m *model.Model) error {
	if gpuFuses(m) == nil {
		return nil
	}
	return gpuExecutes(m)
}

// gpuRefusal is the error of a pass the GPU engine does not run.
func gpuRefusal(m *model.Model, what string) error {
	return fmt.Errorf("%s: %s: %w by the GPU engine", m.Arch.Name, what, model.ErrUnsupported)
}

// gpuOutput checks the steps after the blocks: output_norm and the output
// product, which step and wideStep run fused, then only scale and
// soft-cap steps on the logits (gpuExecOutput).
func gpuOutput(m *model.Model) error {
	out := m.Graph.Output
	if len(out) < 2 || out[0].Op != model.OpNorm || out[0].W != model.OutputNorm || out[1].Op != model.OpMatMul || out[1].W != model.Output {
		return gpuRefusal(m, "output steps")
	}
	for _, s := range out[2:] {
		if (s.Op != model.OpScale && s.Op != model.OpSoftCap) || s.In != model.BufLogits || s.Out != model.BufLogits {
			return gpuRefusal(m, "output step "+s.Name)
		}
	}
	return nil
}

// gpuFuses says whether the fused layer (gpu_step_cuda.go) computes m's
// blocks: the llama block (attn_norm, Q/K/V with optional biases and
// per-head norms, RoPE without LongRoPE, plain causal attention,
// attn_output, ffn_norm, SwiGLU, ffn_down) and nothing else, no input
// steps, no steps after the output product.
func gpuFuses(m *model.Model) error {
	if len(m.Graph.Input) > 0 {
		return gpuRefusal(m, "input step "+m.Graph.Input[0].Name)
	}
	if err := gpuOutput(m); err != nil {
		return err
	}
	if len(m.Graph.Output) > 2 {
		return gpuRefusal(m, "output step "+m.Graph.Output[2].Name)
	}
	if m.RopeAttnFactor != 1 || m.Tensors[model.RopeFactorsLong] != nil || m.Tensors[model.RopeFactorsShort] != nil {
		return gpuRefusal(m, "LongRoPE")
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
				return gpuRefusal(m, fmt.Sprintf("step blk.%d.%s (%v)", l, s.Name, s.Op))
			}
		}
	}
	return nil
}

// gpuExecutes says whether the executor (gpu_exec_cuda.go) runs m: input
// steps that scale or soft-cap the embeddings, any block of the ops it
// launches with the weights the block holds, the rotation of Q and of K
// right before the attention (the cache write runs with it; LongRoPE's
// factors and attention factor too), expert mixtures of at most
// kernels.MaxExpertsUsed experts per token.
func gpuExecutes(m *model.Model) error {
	if err := gpuOutput(m); err != nil {
		return err
	}
	for _, s := range m.Graph.Input {
		if (s.Op != model.OpScale && s.Op != model.OpSoftCap) || s.In != model.BufX || s.Out != model.BufX {
			return gpuRefusal(m, "input step "+s.Name)
		}
	}
	for l, b := range m.Graph.Blocks {
		if err := gpuExecBlock(m, l, b); err != nil {
			return err
		}
	}
	return nil
}

// gpuExecBlock checks block l's steps for the executor.
func gpuExecBlock(m *model.Model, l int, steps []model.Step) error {
	refuse := func(s model.Step, why string) error {
		return gpuRefusal(m, fmt.Sprintf("step blk.%d.%s (%v): %s", l, s.Name, s.Op, why))
	}
	has := func(id model.TensorID) bool { return id == model.NoTensor || m.Layers[l][id] != nil }
	for i, s := range steps {
		if s.Out == model.BufRows || s.Out == model.BufLogits || s.In == model.BufRows || s.In == model.BufLogits {
			return refuse(s, "the output rows inside a block")
		}
		if !has(s.W) || !has(s.Bias) {
			return refuse(s, "a tensor the block lacks")
		}
		switch s.Op {
		case model.OpNorm:
			if s.W == model.NoTensor || m.BufWidth(s.In)%int(m.Layers[l][s.W].Dims[0]) != 0 || m.BufWidth(s.In) != m.BufWidth(s.Out) {
				return refuse(s, "norm width")
			}
		case model.OpMatMul:
			if s.W == model.NoTensor {
				return refuse(s, "no matrix")
			}
		case model.OpAdd, model.OpScale, model.OpSoftCap:
			if m.BufWidth(s.In) != m.BufWidth(s.Out) {
				return refuse(s, "widths")
			}
		case model.OpSplit:
			if s.In == s.Out || s.Offset < 0 || s.Offset+m.BufWidth(s.Out) > m.BufWidth(s.In) {
				return refuse(s, "columns past the row")
			}
		case model.OpRope:
			// Q and K are rotated as the attention stores K: nothing but
			// the other rotation may come between.
			if s.In != s.Out || (s.In != model.BufQ && s.In != model.BufK) {
				return refuse(s, "a rotation of another buffer than Q or K")
			}
			j := i + 1
			for j < len(steps) && steps[j].Op == model.OpRope {
				j++
			}
			if j == len(steps) || steps[j].Op != model.OpAttention {
				return refuse(s, "a rotation not right before the attention")
			}
		case model.OpAttention:
			if s.In != model.BufQ || s.Out != model.BufAtt {
				return refuse(s, "attention of other buffers than Q into Att")
			}
			rot := 0
			for j := i - 1; j >= 0 && steps[j].Op == model.OpRope; j-- {
				rot |= 1 << (steps[j].In - model.BufQ)
			}
			if rot == 1 || rot == 2 {
				return refuse(s, "only one of Q and K rotated")
			}
			// The rotated K goes to the cache only; the buffer keeps K
			// as the product left it.
			if rot == 3 && !execDead(model.BufK, append([][]model.Step{steps[i+1:]}, m.Graph.Blocks[l+1:]...)) {
				return refuse(s, "K read after the attention")
			}
		case model.OpGLU:
			if s.Act != model.ActSiLU && s.Act != model.ActGELUTanh {
				return refuse(s, "activation")
			}
			if s.In2 == model.NoBuf && (s.In == s.Out || m.BufWidth(s.In) != 2*m.BufWidth(s.Out)) {
				return refuse(s, "fused gate and up widths")
			}
			if s.In2 != model.NoBuf && (m.BufWidth(s.In) != m.BufWidth(s.Out) || m.BufWidth(s.In2) != m.BufWidth(s.Out)) {
				return refuse(s, "gate and up widths")
			}
		case model.OpMoE:
			for _, id := range s.Experts {
				if id == model.NoTensor || !has(id) || len(m.Layers[l][id].Dims) != 3 {
					return refuse(s, "expert tensors")
				}
			}
			if s.Used < 1 || s.Used > m.Experts || s.Used > kernels.MaxExpertsUsed || s.W == model.NoTensor {
				return refuse(s, fmt.Sprintf("%d of %d experts per token", s.Used, m.Experts))
			}
		default:
			return refuse(s, "no kernel")
		}
	}
	return nil
}
