package main

import (
	"errors"
	"fmt"

	"llmserve/decode"
	"llmserve/gguf"
	"llmserve/model"
)

// openModel maps a GGUF file and describes the model in it (model.Open,
// which tests of malformed files call too). The caller closes the file once
// done with the model.
func openModel(path string) (*gguf.File, *model.Model, error) {
	return model.Open(path)
}

// overlapUsage describes the --no-overlap flag.
const overlapUsage = "launch each kernel only once the one ahead has finished, instead of letting it start early and wait on the device (GPU, compute capability 9.0+)"

// graphBucketsUsage describes the --graph-buckets flag.
const graphBucketsUsage = "comma-separated `list` of step sizes in 1..64, ascending, that get a CUDA graph (default 1,2,4,8,16,32,64): a step is padded to the smallest that holds it; steps of more tokens (up to 64) run eagerly at their size (GPU)"

// graphBucketsFlag parses --graph-buckets into dst; a bad list stops the
// command at start-up.
func graphBucketsFlag(dst *decode.Buckets) func(string) error {
	return func(v string) error {
		b, err := decode.ParseBuckets(v)
		if err != nil {
			return err
		}
		*dst = b
		return nil
	}
}

const deterministicUsage = "keep every token's logits independent of the batch it runs in: the GPU runs all steps on the matrix-vector kernels, not the tensor cores (slower prompts and wide batches)"

// errNoGPU says that this binary was built without GPU support.
var errNoGPU = errors.New("this build has no GPU support (build with -tags cuda)")

// engineConfig is what the commands' flags say about the engine.
type engineConfig struct {
	Context    int    // positions per sequence
	MaxSeqs    int    // sequence slots
	MaxBatch   int    // tokens per CPU step
	Threads    int    // CPU threads
	GPULayers  int    // < 0: the GPU when there is one; 0: the CPU; > 0: the GPU (all layers)
	CUDAGraphs bool   // replay decode steps from captured CUDA graphs
	NoOverlap  bool   // launch each kernel only once the previous one has finished
	GraphDump  string // folder for DOT files of captured graphs, or ""
	GraphCheck bool   // run steps eagerly and from graphs and compare
	// GraphBuckets are the step sizes with a CUDA graph; nil: the default.
	GraphBuckets decode.Buckets
	// Deterministic keeps a token's logits independent of its batch (GPU:
	// no tensor-core products).
	Deterministic bool
	// The KV cache: cell types, tokens per block, pool budget in bytes.
	// The GPU engine keeps f16 cells in its paged pool (the default, or
	// -ctk f16 -ctv f16) or, with -ctk f32 -ctv f32 and for the models the
	// pool does not take, one f32 region per slot.
	CacheTypeK, CacheTypeV decode.KVType
	KVBlock                int
	KVMemory               int64
	KVShare                float64      // pool as a share of the available memory, when KVMemory is 0
	Info                   func(string) // progress and diagnostics of the GPU engine; nil: none
	Progress               decode.Progress
	TP                     tpOptions // -tp, --split-mode, --nccl-lib
}

// openEngine opens the GPU engine when the configuration asks for it and the
// build and machine have one, else the CPU engine. warn receives every
// fallback. It returns the engine and a short description of it.
func openEngine(m *model.Model, c engineConfig, warn func(string)) (decode.Engine, string, error) {
	if err := checkTP(m, c.TP, c.GPULayers); err != nil {
		return nil, "", err
	}
	if c.GPULayers != 0 {
		if c.GPULayers > 0 && c.GPULayers < len(m.Layers) {
			warn(fmt.Sprintf("partial offload is not supported: all %d layers run on the GPU (asked for %d)", len(m.Layers), c.GPULayers))
		}
		e, err := openGPUEngine(m, c, warn)
		switch {
		case err == nil:
			if _, paged := e.(decode.PagedEngine); !paged && (c.CacheTypeK > decode.KVF32 || c.CacheTypeV > decode.KVF32 || c.KVMemory > 0 || c.KVShare > 0) {
				warn("the GPU engine keeps an f32 KV cache of one region per slot here (its paged pool holds f16 cells only, and not every model): --cache-type-k, --cache-type-v and --kv-memory apply to the CPU engine")
			}
			desc := "GPU, CUDA graphs on"
			switch {
			case c.TP.Ranks > 1:
				desc = fmt.Sprintf("%d GPUs, tensor parallel, eager", c.TP.Ranks)
			case !c.CUDAGraphs:
				desc = "GPU, CUDA graphs off"
			}
			if c.GraphBuckets != nil {
				desc += " (buckets " + c.GraphBuckets.String() + ")"
			}
			return e, desc, nil
		case c.TP.Ranks > 1:
			return nil, "", err // a split model has no CPU fallback
		case c.GPULayers > 0 || !errors.Is(err, errNoGPU):
			warn(fmt.Sprintf("GPU engine unavailable, running on the CPU: %v", err))
		}
	}
	if c.GraphBuckets != nil {
		warn("--graph-buckets applies to the GPU engine; the CPU engine runs every step at its own size")
	}
	e, err := decode.NewCPUEngine(m, decode.CPUOptions{Context: c.Context, MaxSeqs: c.MaxSeqs, MaxBatch: c.MaxBatch, Threads: c.Threads, Progress: c.Progress,
		CacheTypeK: c.CacheTypeK, CacheTypeV: c.CacheTypeV, BlockSize: c.KVBlock, KVMemory: c.KVMemory, KVMemoryShare: c.KVShare})
	if err != nil {
		return nil, "", err
	}
	return e, "CPU", nil
}
