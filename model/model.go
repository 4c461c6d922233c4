// Package model describes decoder-only transformer architectures (llama,
// mistral, Mixtral-style mixtures, qwen2, qwen3, gemma2, phi3) from GGUF
// metadata: their hyperparameters, their tensors (one table, table.go) and
// their forward pass as a sequence of named steps (graph.go). Each
// architecture is one file that registers its Arch. It never runs
// anything: backends in decode/ execute what it describes.
package model

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"llmserve/gguf"
)

// Arch is one architecture: how to read its own metadata and how to build
// its forward pass.
type Arch struct {
	Name string
	// Hparams, when set, reads the architecture's own metadata keys
	// (under "{Name}.") into c after the common ones.
	Hparams func(f *gguf.File, c *Config) error
	// Build returns the forward pass of a model of c.
	Build func(c *Config) Graph
}

// Config holds a model's hyperparameters.
type Config struct {
	Arch      *Arch
	Name      string
	Embd      int     // embedding width
	Layers    int     // transformer blocks
	Heads     int     // query heads
	KVHeads   int     // key/value heads (GQA)
	HeadDim   int     // width of one head
	FFN       int     // feed-forward hidden width (of one expert in a mixture)
	Vocab     int     // vocabulary size (rows of token_embd)
	CtxTrain  int     // trained context length
	RMSEps    float32 // RMSNorm epsilon
	RopeBase  float32 // RoPE frequency base
	RopeDim   int     // rotated dimensions per head
	RopeScale float32 // linear position scale (1 = none)

	RopeOrigCtx    int     // context the LongRoPE short factors cover; 0 = CtxTrain
	RopeAttnFactor float32 // scale of the rotated values (LongRoPE attn_factor); 1 = none
	SlidingWindow  int     // attention.sliding_window, 0 = none
	Experts        int     // expert_count, 0 = a dense feed-forward
	ExpertsUsed    int     // expert_used_count
	AttnScale      float32 // attention logit scale, 0 = 1/√HeadDim
	AttnSoftcap    float32 // attention logit soft-capping, 0 = none
	FinalSoftcap   float32 // final logit soft-capping, 0 = none
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

// Layer holds one block's tensors by TensorID; those the architecture does
// not use are nil.
type Layer = Tensors

// Model is a loaded model description.
type Model struct {
	Config
	Graph   Graph
	Tensors Tensors // the global tensors; Tensors[Output] is Tensors[TokEmbd] when the output is tied
	Layers  []Layer
}

// ErrUnsupported is wrapped by Load for architectures or features llmserve
// does not implement.
var ErrUnsupported = errors.New("unsupported")

// archs lists the supported architectures by general.architecture. Each
// architecture's file adds itself from init; it is not written after.
var archs = map[string]*Arch{}

// register adds an architecture; each architecture's file calls it.
func register(a *Arch) { archs[a.Name] = a }

// Archs is the sorted list of supported architecture names.
func Archs() []string {
	names := make([]string, 0, len(archs))
	for n := range archs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// LookupArch returns the registered architecture called name.
func LookupArch(name string) (*Arch, error) {
	a, ok := archs[name]
	if !ok {
		return nil, fmt.Errorf("model: architecture %q: %w (supported: %s)", name, ErrUnsupported, strings.Join(Archs(), ", "))
	}
	return a, nil
}

// Load describes the model in f. It checks every hyperparameter (finite,
// positive, in range, consistent) and every tensor's shape and type against
// what the engines run, so that a model that loads never fails inside a
// forward step because of its metadata.
func Load(f *gguf.File) (*Model, error) {
	name, err := f.String("general.architecture")
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	arch, err := LookupArch(name)
	if err != nil {
		return nil, err
	}
	cfg, err := readConfig(f, arch)
	if err != nil {
		return nil, fmt.Errorf("model: %s: %w", name, err)
	}
	if _, ok := f.Tensor(Spec(TokEmbd).Name); !ok {
		return nil, fmt.Errorf("model: %s: tensor %q not found", name, Spec(TokEmbd).Name)
	}
	if cfg.Layers > len(f.Tensors)/minTensorsPerLayer {
		return nil, fmt.Errorf("model: %s: %d blocks need at least %d tensors, the file has %d", name, cfg.Layers, cfg.Layers*minTensorsPerLayer, len(f.Tensors))
	}
	m := &Model{Config: cfg}
	m.Graph = arch.Build(&m.Config)
	if err := m.Graph.check(&m.Config); err != nil {
		return nil, fmt.Errorf("model: %s: %w", name, err)
	}
	if err := m.loadTensors(f); err != nil {
		return nil, fmt.Errorf("model: %s: %w", name, err)
	}
	return m, nil
}

// Tied reports whether the output projection is token_embd.
func (m *Model) Tied() bool { return m.Tensors[Output] == m.Tensors[TokEmbd] }

// RopeNeox reports whether the blocks rotate neox-style (the option of
// their RoPE steps).
func (m *Model) RopeNeox() bool {
	for _, b := range m.Graph.Blocks {
		for _, s := range b {
			if s.Op == OpRope {
				return s.Neox
			}
		}
	}
	return false
}

// EachTensor calls fn once for every distinct weight tensor of the model
// (a tied output counts once), globals first, in table order.
func (m *Model) EachTensor(fn func(*Tensor)) {
	seen := map[*Tensor]bool{}
	visit := func(ts *Tensors) {
		for _, t := range ts {
			if t != nil && !seen[t] {
				seen[t] = true
				fn(t)
			}
		}
	}
	visit(&m.Tensors)
	for i := range m.Layers {
		visit(&m.Layers[i])
	}
}
