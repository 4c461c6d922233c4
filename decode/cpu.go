package decode

import (
	"fmt"
	"runtime"

	"llmserve/gguf"
	"llmserve/kernels"
	"llmserve/model"
)

// CPUOptions sizes a CPU engine.
type CPUOptions struct {
	Context  int // positions per sequence; 0 = the model's trained context
	MaxSeqs  int // sequence slots in the KV cache; 0 = 1
	MaxBatch int // tokens per internal step; larger batches run in chunks; 0 = 512
	Threads  int // worker threads; 0 = GOMAXPROCS
	// CacheTypeK and CacheTypeV are the element types of the KV cache
	// (KVDefault: f16).
	CacheTypeK, CacheTypeV KVType
	// BlockSize is the number of tokens per block of the paged KV pool;
	// 0 = DefaultBlockSize.
	BlockSize int
	// KVMemory is the memory budget of the KV pool in bytes; 0 = room for
	// MaxSeqs full contexts. The pool holds at least one full context.
	KVMemory int64
	// KVMemoryShare, when KVMemory is 0, sizes the pool as this share
	// (0 to 1) of the memory available at start-up instead.
	KVMemoryShare float64
	// Progress, when set, is told how far reading the weights into memory
	// has come. They are read once at load, like llama.cpp's prefetch, so
	// the first request does not wait for the disk.
	Progress Progress
}

// CPUEngine runs the forward pass a model describes (model.Graph) on the
// CPU with the pure-Go kernels, step by step. It is the reference the GPU
// engine is tested against.
type CPUEngine struct {
	m    *model.Model
	pool *kernels.Pool
	w    cpuWeights
	opts CPUOptions

	kvDim int
	kv    *KVCache  // the paged pool of every layer's K and V cells
	fixed [][]int32 // [MaxSeqs][BlocksFor(Context)] each slot's own blocks, for batches without block tables; nil when the pool is too small

	ropeFreqs []float32 // [RopeDim/2] frequency divisors (llama3, LongRoPE, linear scale), or nil
	s         cpuScratch
	dump      TensorDump // receives every named intermediate when set
	pageSum   byte       // sum of the bytes prefault read, kept so the reads stay
}

// cpuScratch holds the activations of one chunk of at most MaxBatch tokens.
type cpuScratch struct {
	bufs   [model.NumBufs][]float32 // [B, BufWidth(b)] for the buffers the graph uses
	scores []float32                // [Threads, Context] attention scores per worker
	kvRows []float32                // [Threads, 2, Context, HeadDim] one KV head's K and V rows widened to f32 per worker (f16, q8_0 caches; else empty)
	rowTok []int                    // [B] token index of each logits row
	moe    moeScratch               // buffers of the expert mixture, when there is one
}

// NewCPUEngine prepares m for inference on the CPU.
func NewCPUEngine(m *model.Model, opts CPUOptions) (*CPUEngine, error) {
	if opts.Context <= 0 {
		opts.Context = m.CtxTrain
	}
	if opts.MaxSeqs <= 0 {
		opts.MaxSeqs = 1
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 512
	}
	if opts.Threads <= 0 {
		opts.Threads = runtime.GOMAXPROCS(0)
	}
	e := &CPUEngine{m: m, kvDim: m.KVHeads * m.HeadDim}
	if opts.KVMemory <= 0 && opts.KVMemoryShare > 0 {
		avail := availableMemory()
		if avail <= 0 {
			return nil, fmt.Errorf("decode: a KV pool of %.0f%% of the available memory: the available memory is unknown here; give a size", 100*opts.KVMemoryShare)
		}
		opts.KVMemory = int64(min(opts.KVMemoryShare, 1) * float64(avail))
	}
	layout, err := cpuKVLayout(m, &opts)
	if err != nil {
		return nil, err
	}
	e.opts = opts
	if err := checkCPUMemory(m, opts, availableMemory()); err != nil {
		return nil, err
	}
	e.pageSum = prefault(m, opts.Progress)
	if e.w, err = loadCPUWeights(m); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if e.ropeFreqs, err = ropeFactors(m, opts.Context); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if e.kv, err = NewKVCache(layout); err != nil {
		return nil, err
	}
	e.fixed = fixedTables(layout, opts.MaxSeqs, opts.Context)
	B := opts.MaxBatch
	used := m.Graph.Buffers()
	for b := range e.s.bufs {
		if used[b] && model.Buf(b) != model.BufLogits {
			e.s.bufs[b] = make([]float32, B*m.BufWidth(model.Buf(b)))
		}
	}
	e.s.scores = make([]float32, opts.Threads*opts.Context)
	if layout.K != KVF32 || layout.V != KVF32 {
		e.s.kvRows = make([]float32, opts.Threads*2*opts.Context*m.HeadDim)
	}
	e.s.rowTok = make([]int, B)
	if m.Experts > 0 {
		e.s.moe = newMoEScratch(&m.Config, B)
	}
	e.pool = kernels.NewPool(opts.Threads)
	return e, nil
}

// checkCPUMemory computes, without overflow, the bytes of the KV cache and
// the scratch buffers NewCPUEngine allocates, and refuses them when they
// exceed avail (< 0: unknown). The weights stay in the file's mapping.
func checkCPUMemory(m *model.Model, opts CPUOptions, avail int64) error {
	kvDim := m.KVHeads * m.HeadDim
	layout, err := cpuKVLayout(m, &opts)
	if err != nil {
		return err
	}
	kv, err := sizeProduct("decode: KV pool", layout.Blocks, layout.BlockSize, int(layout.BytesPerToken()))
	if err != nil {
		return err
	}
	rows, err := sizeProduct("decode: activations", opts.MaxBatch, activationWidth(m), 4)
	if err != nil {
		return err
	}
	scores, err := sizeProduct("decode: attention scores", opts.Threads, opts.Context, 4)
	if err != nil {
		return err
	}
	var widened int64
	if layout.K != KVF32 || layout.V != KVF32 {
		if widened, err = sizeProduct("decode: widened KV rows", opts.Threads, 2, opts.Context, m.HeadDim, 4); err != nil {
			return err
		}
	}
	need, err := sizeSum("decode: CPU buffers", kv, rows, scores, widened)
	if err != nil {
		return err
	}
	return checkFits(fmt.Sprintf("decode: KV pool of %d layers × %d blocks × %d tokens × %d values (%s keys, %s values) and buffers",
		len(m.Layers), layout.Blocks, layout.BlockSize, kvDim, layout.K, layout.V), need, avail)
}

// prefault reads one byte of every page of every weight tensor, so that the
// memory-mapped weights are resident, reporting progress (when not nil) as
// it goes. It returns the sum of the bytes read.
func prefault(m *model.Model, progress Progress) byte {
	var total, done int64
	m.EachTensor(func(t *model.Tensor) { total += int64(len(t.Data)) })
	const page = 4096
	var sum byte
	m.EachTensor(func(t *model.Tensor) {
		for i := 0; i < len(t.Data); i += page {
			sum += t.Data[i]
		}
		done += int64(len(t.Data))
		if progress != nil {
			progress(done, total)
		}
	})
	return sum
}

// f32s decodes a 1-D tensor of any dequantizable type into float32.
func f32s(t *model.Tensor) ([]float32, error) {
	n := 1
	for _, d := range t.Dims {
		n *= int(d)
	}
	out := make([]float32, n)
	if err := gguf.Dequantize(t.Type, t.Data, out); err != nil {
		return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	return out, nil
}

// VocabSize is the number of logits per token.
func (e *CPUEngine) VocabSize() int { return e.m.Vocab }

// ContextSize is the number of positions per sequence.
func (e *CPUEngine) ContextSize() int { return e.opts.Context }

// MaxSeqs is the number of sequence slots.
func (e *CPUEngine) MaxSeqs() int { return e.opts.MaxSeqs }

// Close stops the worker threads.
func (e *CPUEngine) Close() error {
	e.pool.Close()
	return nil
}

// KVLayout describes the engine's paged KV pool (PagedEngine).
func (e *CPUEngine) KVLayout() KVLayout { return e.kv.Layout }

// Forward runs one step over b; see Engine. Without block tables
// (b.Blocks nil) each slot uses its own fixed blocks.
func (e *CPUEngine) Forward(b *Batch, out []float32) error {
	if err := b.check(e.m.Vocab, e.opts.Context, e.opts.MaxSeqs, out); err != nil {
		return err
	}
	if err := e.checkTables(b); err != nil {
		return err
	}
	return b.chunks(e.opts.MaxBatch, e.m.Vocab, out, e.step)
}
