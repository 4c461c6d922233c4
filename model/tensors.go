package model

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"llmserve/gguf"
)

// MatrixTypes are the tensor types of the weight matrices that every engine
// multiplies (the CPU kernels; the GPU engine runs a subset and falls back
// to the CPU for the rest). Vectors (norms, biases, rope_freqs) are F32.
var MatrixTypes = []gguf.Type{
	gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16,
	gguf.TypeQ4_0, gguf.TypeQ4_1, gguf.TypeQ5_0, gguf.TypeQ5_1, gguf.TypeQ8_0,
	gguf.TypeQ2_K, gguf.TypeQ3_K, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K,
}

// tensorsPerLayer is the fewest tensors a block has (norms, Q, K, V, O and
// the three feed-forward matrices).
const tensorsPerLayer = 9

// checkType refuses a tensor whose type no engine computes with: matrices
// must be one of MatrixTypes, vectors F32.
func checkType(t *Tensor) error {
	if len(t.Dims) == 1 {
		if t.Type != gguf.TypeF32 {
			return fmt.Errorf("tensor %q is %s, want F32", t.Name, t.Type)
		}
		return nil
	}
	if !slices.Contains(MatrixTypes, t.Type) {
		return fmt.Errorf("tensor %q: type %s: %w (matrices may be %v)", t.Name, t.Type, ErrUnsupported, MatrixTypes)
	}
	return nil
}

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
		t := &Tensor{Name: ti.Name, Type: ti.Type, Dims: ti.Dims, Data: f.TensorData(ti)}
		if err := checkType(t); err != nil {
			return nil, err
		}
		return t, nil
	}
	emb, ok := f.Tensor("token_embd.weight")
	if !ok || len(emb.Dims) != 2 {
		return fmt.Errorf("tensor \"token_embd.weight\" not found or not 2-D")
	}
	if emb.Dims[1] < 1 || emb.Dims[1] > maxVocab {
		return fmt.Errorf("tensor \"token_embd.weight\": %d rows is not a vocabulary size in [1, %d]", emb.Dims[1], maxVocab)
	}
	if c.Layers > len(f.Tensors)/tensorsPerLayer {
		return fmt.Errorf("%d blocks need at least %d tensors, the file has %d", c.Layers, c.Layers*tensorsPerLayer, len(f.Tensors))
	}
	c.Vocab = int(emb.Dims[1])
	vocab := int64(c.Vocab)
	if err := checkVocabSize(f, c); err != nil {
		return err
	}
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
		if err := checkRopeFreqs(m.RopeFreqs); err != nil {
			return err
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
		*s.dst = t
	}
	return nil
}

// checkVocabSize compares {arch}.vocab_size, when present, with the rows of
// token_embd.
func checkVocabSize(f *gguf.File, c *Config) error {
	key := c.Arch.Name + ".vocab_size"
	n, err := f.Uint32(key)
	switch {
	case errors.Is(err, gguf.ErrKeyNotFound):
		return nil
	case err != nil:
		return err
	case int(n) != c.Vocab:
		return fmt.Errorf("%s = %d differs from the %d rows of token_embd.weight", key, n, c.Vocab)
	}
	return nil
}

// checkRopeFreqs refuses frequency divisors that are not finite and
// positive: every rotation angle is divided by one of them.
func checkRopeFreqs(t *Tensor) error {
	for i := 0; i+4 <= len(t.Data); i += 4 {
		v := math.Float32frombits(uint32(t.Data[i]) | uint32(t.Data[i+1])<<8 | uint32(t.Data[i+2])<<16 | uint32(t.Data[i+3])<<24)
		if !finite(v) || v <= 0 {
			return fmt.Errorf("tensor %q: value %d is %g, want a finite positive divisor", t.Name, i/4, v)
		}
	}
	return nil
}
