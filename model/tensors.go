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
// to the CPU for the rest). Vectors (norms, biases, rope factors) are F32.
var MatrixTypes = []gguf.Type{
	gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16,
	gguf.TypeQ4_0, gguf.TypeQ4_1, gguf.TypeQ5_0, gguf.TypeQ5_1, gguf.TypeQ8_0,
	gguf.TypeQ2_K, gguf.TypeQ3_K, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K,
}

// checkType refuses a tensor whose type no engine computes with: matrices
// must be one of MatrixTypes, vectors F32.
func checkType(t *Tensor, kind Kind) error {
	if kind != KindMatrix {
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

// layerTensors is the set of tensors block l's steps read, in table order.
func (g *Graph) layerTensors(l int) []TensorID {
	var want [NumTensors]bool
	for _, id := range blockTensors(g.Blocks[l]) {
		want[id] = true
	}
	var ids []TensorID
	for id := range want {
		if want[id] {
			ids = append(ids, TensorID(id))
		}
	}
	return ids
}

// LayerTensors is the set of tensors block l of the pass reads.
func (g *Graph) LayerTensors(l int) []TensorID { return g.layerTensors(l) }

// loadTensors finds every tensor the forward pass reads and checks its
// shape and type against the table.
func (m *Model) loadTensors(f *gguf.File) error {
	c := &m.Config
	emb, ok := f.Tensor(Spec(TokEmbd).Name)
	if !ok || len(emb.Dims) != 2 {
		return fmt.Errorf("tensor \"token_embd.weight\" not found or not 2-D")
	}
	if emb.Dims[1] < 1 || emb.Dims[1] > maxVocab {
		return fmt.Errorf("tensor \"token_embd.weight\": %d rows is not a vocabulary size in [1, %d]", emb.Dims[1], maxVocab)
	}
	if per := len(m.Graph.layerTensors(0)); c.Layers > len(f.Tensors)/per {
		return fmt.Errorf("%d blocks need at least %d tensors, the file has %d", c.Layers, c.Layers*per, len(f.Tensors))
	}
	c.Vocab = int(emb.Dims[1])
	if err := checkVocabSize(f, c); err != nil {
		return err
	}
	for _, id := range m.Graph.Globals {
		t, err := getTensor(f, c, id, -1)
		if err != nil {
			return err
		}
		m.Tensors[id] = t
	}
	if m.Tensors[Output] == nil {
		m.Tensors[Output] = m.Tensors[TokEmbd]
	}
	for _, id := range []TensorID{RopeFreqs, RopeFactorsLong, RopeFactorsShort} {
		if t := m.Tensors[id]; t != nil {
			if err := checkRopeFreqs(t); err != nil {
				return err
			}
		}
	}
	m.Layers = make([]Layer, c.Layers)
	for l := range m.Layers {
		for _, id := range m.Graph.layerTensors(l) {
			t, err := getTensor(f, c, id, l)
			if err != nil {
				return err
			}
			if t == nil {
				return fmt.Errorf("tensor %q not found", TensorName(id, l))
			}
			m.Layers[l][id] = t
		}
	}
	return nil
}

// getTensor returns tensor id of block layer (-1: a global one) with its
// shape and type checked; an optional tensor the file lacks is nil.
func getTensor(f *gguf.File, c *Config, id TensorID, layer int) (*Tensor, error) {
	spec, name := Spec(id), TensorName(id, layer)
	ti, ok := f.Tensor(name)
	if !ok {
		if spec.Optional {
			return nil, nil
		}
		return nil, fmt.Errorf("tensor %q not found", name)
	}
	if dims := c.Shape(id); !slices.Equal(ti.Dims, dims) {
		return nil, fmt.Errorf("tensor %q has shape %v, want %v", name, ti.Dims, dims)
	}
	t := &Tensor{Name: ti.Name, Type: ti.Type, Dims: ti.Dims, Data: f.TensorData(ti)}
	if err := checkType(t, spec.Kind); err != nil {
		return nil, err
	}
	return t, nil
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
