package synth

import (
	"fmt"

	"llmserve/model"
)

// initKind says how a tensor's values are drawn.
type initKind int

const (
	initMatrix    initKind = iota // N(0, 0.02)
	initNorm                      // 1 + N(0, 0.02)
	initBias                      // N(0, 0.02)
	initRopeFreqs                 // llama3 rope divisors, not random
	initRopeLong                  // LongRoPE divisors beyond the original context
	initRopeShort                 // LongRoPE divisors within it (all 1)
)

// tensorSpec is one tensor of a model.
type tensorSpec struct {
	name  string
	dims  []int64 // ggml order: dims[0] is the row length (input features)
	init  initKind
	layer int // block index, or -1 outside the blocks
}

// rowLen is the number of values in one row.
func (t *tensorSpec) rowLen() int64 { return t.dims[0] }

// rows is the number of rows.
func (t *tensorSpec) rows() int64 {
	n := int64(1)
	for _, d := range t.dims[1:] {
		n *= d
	}
	return n
}

// modelConfig is the model package's view of c with vocab tokens, from
// which the architecture's pass and the tensor table give the tensors.
func (c *Config) modelConfig(vocab int) (model.Config, error) {
	arch, err := model.LookupArch(c.Arch)
	if err != nil {
		return model.Config{}, fmt.Errorf("synth: %w", err)
	}
	return model.Config{
		Arch: arch, Embd: c.Embedding, Layers: c.Layers, Heads: c.Heads, KVHeads: c.KVHeads, HeadDim: c.HeadDim,
		FFN: c.FFN, Vocab: vocab, RopeDim: c.HeadDim, Experts: c.Experts, ExpertsUsed: c.ExpertsUsed,
		SlidingWindow: c.SlidingWindow, AttnSoftcap: c.AttnSoftcap, FinalSoftcap: c.FinalSoftcap,
	}, nil
}

// tensors lists the tensors of a model with vocab tokens, in file order
// (token_embd and rope factors, the blocks, output_norm and output), under
// llama.cpp's names: those the architecture's forward pass reads, with the
// shapes of model's tensor table.
func (c *Config) tensors(vocab int) ([]tensorSpec, error) {
	mc, err := c.modelConfig(vocab)
	if err != nil {
		return nil, err
	}
	g := mc.Arch.Build(&mc)
	spec := func(id model.TensorID, layer int) tensorSpec {
		init := initMatrix
		switch model.Spec(id).Kind {
		case model.KindNorm:
			init = initNorm
		case model.KindBias:
			init = initBias
		}
		switch id {
		case model.RopeFreqs:
			init = initRopeFreqs
		case model.RopeFactorsLong:
			init = initRopeLong
		case model.RopeFactorsShort:
			init = initRopeShort
		}
		return tensorSpec{name: model.TensorName(id, layer), dims: mc.Shape(id), init: init, layer: layer}
	}
	present := func(id model.TensorID) bool {
		switch id {
		case model.Output:
			return !c.Tied
		case model.RopeFreqs:
			return c.RopeScaling != nil
		case model.RopeFactorsLong, model.RopeFactorsShort:
			return c.LongRope != nil
		}
		return true
	}
	var head, tail []tensorSpec
	for _, id := range g.Globals {
		switch {
		case !present(id):
		case id == model.OutputNorm || id == model.Output:
			tail = append(tail, spec(id, -1))
		default:
			head = append(head, spec(id, -1))
		}
	}
	ts := head
	for l := range c.Layers {
		for _, id := range g.LayerTensors(l) {
			ts = append(ts, spec(id, l))
		}
	}
	return append(ts, tail...), nil
}
