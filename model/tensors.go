package model

import (
	"fmt"
	"slices"

	"llmserve/gguf"
)

// loadTensors finds every tensor the architecture needs and checks its shape.
func (m *Model) loadTensors(f *gguf.File) error {
	c := &m.Config
	q, kv := int64(c.Heads*c.HeadDim), int64(c.KVHeads*c.HeadDim)
	embd, ffn := int64(c.Embd), int64(c.FFN)
	get := func(name string, dims ...int64) (*Tensor, error) {
		ti, ok := f.Tensor(name)
		if !ok {
			return nil, fmt.Errorf("tensor %q not found", name)
		}
		if !slices.Equal(ti.Dims, dims) {
			return nil, fmt.Errorf("tensor %q has shape %v, want %v", name, ti.Dims, dims)
		}
		return &Tensor{Name: ti.Name, Type: ti.Type, Dims: ti.Dims, Data: f.TensorData(ti)}, nil
	}
	emb, ok := f.Tensor("token_embd.weight")
	if !ok || len(emb.Dims) != 2 {
		return fmt.Errorf("tensor \"token_embd.weight\" not found or not 2-D")
	}
	c.Vocab = int(emb.Dims[1])
	vocab := int64(c.Vocab)
	var err error
	if m.TokEmbd, err = get("token_embd.weight", embd, vocab); err != nil {
		return err
	}
	if m.OutputNorm, err = get("output_norm.weight", embd); err != nil {
		return err
	}
	m.Output = m.TokEmbd
	if _, ok := f.Tensor("output.weight"); ok {
		if m.Output, err = get("output.weight", embd, vocab); err != nil {
			return err
		}
	}
	if _, ok := f.Tensor("rope_freqs.weight"); ok {
		if m.RopeFreqs, err = get("rope_freqs.weight", int64(c.RopeDim/2)); err != nil {
			return err
		}
		if m.RopeFreqs.Type != gguf.TypeF32 {
			return fmt.Errorf("tensor \"rope_freqs.weight\" is %s, want F32", m.RopeFreqs.Type)
		}
	}
	m.Layers = make([]Layer, c.Layers)
	for i := range m.Layers {
		if err := m.loadLayer(i, get, q, kv, embd, ffn); err != nil {
			return err
		}
	}
	return nil
}

func (m *Model) loadLayer(i int, get func(string, ...int64) (*Tensor, error), q, kv, embd, ffn int64) error {
	l := &m.Layers[i]
	hd := int64(m.HeadDim)
	specs := []struct {
		dst  **Tensor
		name string
		dims []int64
		want bool
	}{
		{&l.AttnNorm, "attn_norm.weight", []int64{embd}, true},
		{&l.Q, "attn_q.weight", []int64{embd, q}, true},
		{&l.K, "attn_k.weight", []int64{embd, kv}, true},
		{&l.V, "attn_v.weight", []int64{embd, kv}, true},
		{&l.O, "attn_output.weight", []int64{q, embd}, true},
		{&l.QBias, "attn_q.bias", []int64{q}, m.Arch.QKVBias},
		{&l.KBias, "attn_k.bias", []int64{kv}, m.Arch.QKVBias},
		{&l.VBias, "attn_v.bias", []int64{kv}, m.Arch.QKVBias},
		{&l.QNorm, "attn_q_norm.weight", []int64{hd}, m.Arch.QKNorm},
		{&l.KNorm, "attn_k_norm.weight", []int64{hd}, m.Arch.QKNorm},
		{&l.FFNNorm, "ffn_norm.weight", []int64{embd}, true},
		{&l.Gate, "ffn_gate.weight", []int64{embd, ffn}, true},
		{&l.Up, "ffn_up.weight", []int64{embd, ffn}, true},
		{&l.Down, "ffn_down.weight", []int64{ffn, embd}, true},
	}
	for _, s := range specs {
		if !s.want {
			continue
		}
		t, err := get(fmt.Sprintf("blk.%d.%s", i, s.name), s.dims...)
		if err != nil {
			return err
		}
		if len(s.dims) == 1 && t.Type != gguf.TypeF32 {
			return fmt.Errorf("tensor %q is %s, want F32", t.Name, t.Type)
		}
		*s.dst = t
	}
	return nil
}
