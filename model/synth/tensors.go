package synth

import "fmt"

// initKind says how a tensor's values are drawn.
type initKind int

const (
	initMatrix    initKind = iota // N(0, 0.02)
	initNorm                      // 1 + N(0, 0.02)
	initBias                      // N(0, 0.02)
	initRopeFreqs                 // llama3 rope divisors, not random
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

// tensors lists the tensors of a model with vocab tokens, in file order,
// under llama.cpp's names.
func (c *Config) tensors(vocab int) []tensorSpec {
	e, q, kv, ffn, v := int64(c.Embedding), int64(c.Heads*c.HeadDim), int64(c.KVHeads*c.HeadDim), int64(c.FFN), int64(vocab)
	ts := []tensorSpec{{name: "token_embd.weight", dims: []int64{e, v}, init: initMatrix, layer: -1}}
	if c.RopeScaling != nil {
		ts = append(ts, tensorSpec{name: "rope_freqs.weight", dims: []int64{int64(c.HeadDim / 2)}, init: initRopeFreqs, layer: -1})
	}
	for l := range c.Layers {
		add := func(name string, init initKind, dims ...int64) {
			ts = append(ts, tensorSpec{name: fmt.Sprintf("blk.%d.%s", l, name), dims: dims, init: init, layer: l})
		}
		add("attn_norm.weight", initNorm, e)
		add("attn_q.weight", initMatrix, e, q)
		add("attn_k.weight", initMatrix, e, kv)
		add("attn_v.weight", initMatrix, e, kv)
		if c.QKVBias {
			add("attn_q.bias", initBias, q)
			add("attn_k.bias", initBias, kv)
			add("attn_v.bias", initBias, kv)
		}
		if c.QKNorm {
			add("attn_q_norm.weight", initNorm, int64(c.HeadDim))
			add("attn_k_norm.weight", initNorm, int64(c.HeadDim))
		}
		add("attn_output.weight", initMatrix, q, e)
		add("ffn_norm.weight", initNorm, e)
		add("ffn_gate.weight", initMatrix, e, ffn)
		add("ffn_up.weight", initMatrix, e, ffn)
		add("ffn_down.weight", initMatrix, ffn, e)
	}
	ts = append(ts, tensorSpec{name: "output_norm.weight", dims: []int64{e}, init: initNorm, layer: -1})
	if !c.Tied {
		ts = append(ts, tensorSpec{name: "output.weight", dims: []int64{e, v}, init: initMatrix, layer: -1})
	}
	return ts
}
