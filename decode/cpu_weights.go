package decode

import (
	"fmt"

	"llmserve/kernels"
	"llmserve/model"
)

// cpuTensor is one weight tensor in the kernels' form.
type cpuTensor struct {
	mat  kernels.Matrix   // a 2-D matrix
	exps []kernels.Matrix // a 3-D tensor: [expert] matrices
	vec  []float32        // a norm, bias or factor vector, decoded
}

// cpuTensors holds a model's or a block's tensors by model.TensorID.
type cpuTensors [model.NumTensors]cpuTensor

// cpuWeights holds every tensor the model's pass reads.
type cpuWeights struct {
	global cpuTensors
	layers []cpuTensors
}

// loadCPUWeights converts every tensor of m, as the tensor table says it is
// used: vectors are decoded to f32, matrices wrapped, 3-D tensors split
// into one matrix per expert.
func loadCPUWeights(m *model.Model) (cpuWeights, error) {
	w := cpuWeights{layers: make([]cpuTensors, len(m.Layers))}
	if err := convertTensors(&m.Tensors, &w.global); err != nil {
		return w, err
	}
	for l := range m.Layers {
		if err := convertTensors(&m.Layers[l], &w.layers[l]); err != nil {
			return w, err
		}
	}
	return w, nil
}

func convertTensors(ts *model.Tensors, dst *cpuTensors) error {
	for id, t := range ts {
		if t == nil {
			continue
		}
		c, err := convertTensor(t, model.Spec(model.TensorID(id)).Kind)
		if err != nil {
			return err
		}
		dst[id] = c
	}
	return nil
}

func convertTensor(t *model.Tensor, kind model.Kind) (cpuTensor, error) {
	if kind != model.KindMatrix {
		v, err := f32s(t)
		return cpuTensor{vec: v}, err
	}
	if len(t.Dims) == 3 {
		n, rows, cols := int(t.Dims[2]), int(t.Dims[1]), int(t.Dims[0])
		size := len(t.Data) / n
		exps := make([]kernels.Matrix, n)
		for e := range exps {
			mx, err := kernels.NewMatrix(t.Type, rows, cols, t.Data[e*size:(e+1)*size])
			if err != nil {
				return cpuTensor{}, fmt.Errorf("tensor %q expert %d: %w", t.Name, e, err)
			}
			exps[e] = mx
		}
		return cpuTensor{exps: exps}, nil
	}
	mx, err := kernels.NewMatrix(t.Type, t.Rows(), int(t.Dims[0]), t.Data)
	if err != nil {
		return cpuTensor{}, fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	return cpuTensor{mat: mx}, nil
}

// activationWidth is the number of f32 values per token of the buffers the
// pass uses (every buffer when the model has no pass, as a bound).
func activationWidth(m *model.Model) int {
	used := m.Graph.Buffers()
	if len(m.Graph.Blocks) == 0 {
		for b := range used {
			used[b] = true
		}
	}
	n := 0
	for b, u := range used {
		if u && model.Buf(b) != model.BufLogits {
			n += m.BufWidth(model.Buf(b))
		}
	}
	if m.Experts > 0 {
		n += moeWidth(&m.Config)
	}
	return n
}

// ropeFactors returns the per-frequency divisors of the rotation angles:
// llama3's rope_freqs or phi3's LongRoPE factors (long ones when the
// context exceeds the original one), times the linear position scale's
// inverse (dividing every angle by 1/scale is scaling every position by
// scale), or nil when all are absent.
func ropeFactors(m *model.Model, context int) ([]float32, error) {
	src := m.Tensors[model.RopeFreqs]
	orig := m.RopeOrigCtx
	if orig == 0 {
		orig = m.CtxTrain
	}
	if long := m.Tensors[model.RopeFactorsLong]; long != nil && context > orig {
		src = long
	} else if short := m.Tensors[model.RopeFactorsShort]; short != nil {
		src = short
	}
	if src == nil && m.RopeScale == 1 {
		return nil, nil
	}
	ff := make([]float32, m.RopeDim/2)
	for i := range ff {
		ff[i] = 1
	}
	if src != nil {
		var err error
		if ff, err = f32s(src); err != nil {
			return nil, err
		}
	}
	for i := range ff {
		ff[i] /= m.RopeScale
	}
	return ff, nil
}
