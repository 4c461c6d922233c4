// Package model describes decoder-only transformer architectures (llama,
// mistral, qwen2, qwen3) from GGUF metadata: their hyperparameters, the
// tensors each layer holds and the options that change the order of ops.
// It never runs anything: backends in decode/ execute what it describes.
package model

import (
	"errors"
	"fmt"

	"llmserve/gguf"
)

// Arch describes what distinguishes one architecture's forward pass.
type Arch struct {
	Name     string
	RopeNeox bool // rotate pairs (i, i+d/2) instead of (2i, 2i+1)
	QKVBias  bool // attn_q/k/v carry biases
	QKNorm   bool // per-head RMSNorm on Q and K before RoPE
}

// Config holds a model's hyperparameters.
type Config struct {
	Arch      Arch
	Name      string
	Embd      int     // embedding width
	Layers    int     // transformer blocks
	Heads     int     // query heads
	KVHeads   int     // key/value heads (GQA)
	HeadDim   int     // width of one head
	FFN       int     // feed-forward hidden width
	Vocab     int     // vocabulary size (rows of token_embd)
	CtxTrain  int     // trained context length
	RMSEps    float32 // RMSNorm epsilon
	RopeBase  float32 // RoPE frequency base
	RopeDim   int     // rotated dimensions per head
	RopeScale float32 // linear position scale (1 = none)
}

// Tensor is one weight tensor, its data aliasing the GGUF mapping.
type Tensor struct {
	Name string
	Type gguf.Type
	Dims []int64 // ggml order: Dims[0] is the row length
	Data []byte
}

// Rows is the number of rows of Dims[0] values.
func (t *Tensor) Rows() int {
	n := 1
	for _, d := range t.Dims[1:] {
		n *= int(d)
	}
	return n
}

// Layer holds one transformer block's weights. Optional tensors are nil
// when the architecture has none.
type Layer struct {
	AttnNorm     *Tensor // [Embd]
	Q            *Tensor // [Embd, Heads*HeadDim]
	K, V         *Tensor // [Embd, KVHeads*HeadDim]
	O            *Tensor // [Heads*HeadDim, Embd]
	QBias        *Tensor // [Heads*HeadDim], QKVBias only
	KBias, VBias *Tensor // [KVHeads*HeadDim], QKVBias only
	QNorm, KNorm *Tensor // [HeadDim], QKNorm only
	FFNNorm      *Tensor // [Embd]
	Gate, Up     *Tensor // [Embd, FFN]
	Down         *Tensor // [FFN, Embd]
}

// Model is a loaded model description.
type Model struct {
	Config
	TokEmbd    *Tensor // [Embd, Vocab]
	OutputNorm *Tensor // [Embd]
	Output     *Tensor // [Embd, Vocab]; TokEmbd when the output is tied
	RopeFreqs  *Tensor // [RopeDim/2] F32 frequency divisors (llama3 scaling), or nil
	Layers     []Layer
}

// ErrUnsupported is wrapped by Load for architectures or features llmserve
// does not implement.
var ErrUnsupported = errors.New("unsupported")

// archs lists the supported architectures by general.architecture.
var archs = map[string]Arch{}

// register adds an architecture; each architecture's file calls it.
func register(a Arch) { archs[a.Name] = a }

// Load describes the model in f. It checks every hyperparameter (finite,
// positive, in range, consistent) and every tensor's shape and type against
// what the engines run, so that a model that loads never fails inside a
// forward step because of its metadata.
func Load(f *gguf.File) (*Model, error) {
	name, err := f.String("general.architecture")
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	arch, ok := archs[name]
	if !ok {
		return nil, fmt.Errorf("model: architecture %q: %w (supported: llama, qwen2, qwen3)", name, ErrUnsupported)
	}
	cfg, err := readConfig(f, arch)
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w", name, err)
	}
	m := &Model{Config: cfg}
	if err := m.loadTensors(f); err != nil {
		return nil, fmt.Errorf("model: %s: %w", name, err)
	}
	return m, nil
}

// EachTensor calls fn once for every distinct weight tensor of the model
// (a tied output counts once).
func (m *Model) EachTensor(fn func(*Tensor)) {
	seen := map[*Tensor]bool{}
	visit := func(ts ...*Tensor) {
		for _, t := range ts {
			if t != nil && !seen[t] {
				seen[t] = true
				fn(t)
			}
		}
	}
	visit(m.TokEmbd, m.OutputNorm, m.Output, m.RopeFreqs)
	for i := range m.Layers {
		l := &m.Layers[i]
		visit(l.AttnNorm, l.Q, l.K, l.V, l.O, l.QBias, l.KBias, l.VBias, l.QNorm, l.KNorm, l.FFNNorm, l.Gate, l.Up, l.Down)
	}
}
