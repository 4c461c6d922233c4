//go:build cuda

package decode

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"llmserve/internal/cuda"
	"llmserve/kernels"
	"llmserve/model"
)

// GPUOptions sizes a GPU engine.
type GPUOptions struct {
	Device  int  // CUDA device ordinal
	Context int  // positions per sequence; 0 = the model's trained context
	MaxSeqs int  // sequence slots in the KV cache; 0 = 1
	Graphs  bool // replay one captured CUDA graph per batch bucket instead of launching kernels one by one
	// Buckets are the step sizes a batch chunk is padded to, each with its
	// own graph: ascending, in 1..MaxBucket (Buckets.Validate); nil is
	// DefaultBuckets. A chunk of more tokens than the largest runs eagerly
	// at its own size.
	Buckets []int
	// NoOverlap launches each kernel only once the one ahead has finished,
	// instead of letting it start early and wait for that kernel's results
	// on the device (programmatic dependent launch, compute capability 9.0
	// and a CUDA 12.3 driver or newer).
	NoOverlap bool

	// Warn receives each fallback (a bucket whose graph could not be
	// captured or instantiated runs eagerly); nil drops them.
	Warn func(msg string)
	// Info receives one line per captured graph: bucket, nodes, capture
	// and instantiation time; nil drops them.
	Info func(msg string)
	// GraphDump, when set, is a folder that receives every captured graph
	// in Graphviz form (step-b<bucket>.dot, kernel names and parameters).
	GraphDump string
	// GraphCheck runs every step both eagerly and from its graph and fails
	// the step when the logits differ in a single bit. It implies Graphs.
	// The environment variable LLMSERVE_GRAPH_CHECK=1 turns it on too.
	GraphCheck bool
	// Progress, when set, is told how many bytes of weights have been
	// uploaded.
	Progress Progress
	// Deterministic keeps every token's logits independent of the batch it
	// runs in: every step runs the matrix-vector kernels in chunks of 64
	// tokens (whose sums do not depend on the batch) instead of the
	// tensor-core products, which sum in another order.
	Deterministic bool
	// MoEDense runs an expert mixture's steps of more tokens than a graph
	// holds with every expert over every row instead of grouped by expert
	// (execMoEGrouped: the routing read back, each expert's products over
	// its own tokens' rows only), which is the default: on the device the
	// grouped path gives the dense one's logits bit for bit with F32
	// experts and prompts 1.9x as fast on Mixtral-8x7B (TestGPUMoEGrouped,
	// docs/PERFORMANCE.md). The environment variable LLMSERVE_MOE_GROUPED=0
	// sets it too.
	MoEDense bool
	// Preview also runs what has not yet run on a device: the
	// tensor-parallel engine (NewTPGPUEngine refuses without it) and the
	// soft-capped or windowed decode attention over the pool that writes
	// only the splits a token uses (kernels.Device.SetPreview). The
	// environment variable LLMSERVE_GPU_PREVIEW=1 turns it on too.
	Preview bool
	// MatMulMin is the smallest step, in tokens, whose products run on the
	// tensor cores; 0 is gpuMatMulMin. The environment variable
	// LLMSERVE_MATMUL_MIN sets it too (for measuring the crossover).
	MatMulMin int
	// MatMulQ16Min is the smallest step, in tokens, whose products of
	// quantized matrices run on the 16-bit tensor cores (weights
	// dequantized to f16, kernels.MatMulsOp.Q16) instead of the int8 ones,
	// where those kernels read the matrix; 0 is gpuQ16Min (the steps past
	// the graph buckets: prompts), negative never. The environment
	// variable LLMSERVE_MATMUL_Q16 sets it too: 1 every tensor-core step,
	// 0 never (to compare the kernels on one binary).
	MatMulQ16Min int
	// Paged keeps the KV cache in a paged pool of f16 cells (kv.cuh)
	// instead of one f32 region per slot: BlockSize tokens a block (0:
	// DefaultBlockSize), as many blocks as KVMemory bytes hold (0: room for
	// MaxSeqs contexts). NewPagedGPUEngine opens an
	// engine the scheduler drives in its paged mode.
	Paged     bool
	BlockSize int
	KVMemory  int64
	// KVShare, when KVMemory is 0, sizes the pool as this share (0 < s ≤
	// 1) of the device memory left free after the weights and the step
	// buffers (vLLM's --gpu-memory-utilization, of what the weights
	// leave); it must hold one context.
	KVShare float64
}

// gpuMaxBatch is the largest bucket there may be: the most tokens of a
// step run from a graph, and the most rows of logits one step computes —
// the matrix-vector kernels' batch.
const gpuMaxBatch = kernels.MaxBatch

// MaxBucket (buckets.go, untagged) names the same bound.
var _ [MaxBucket - gpuMaxBatch]struct{}
var _ [gpuMaxBatch - MaxBucket]struct{}

// gpuMaxStep is the most tokens of one step. Steps of more than
// gpuMaxBatch tokens (prompts) run eagerly at their exact size on the
// tensor-core products, and compute the logits of their wanted rows only.
const gpuMaxStep = 512

// gpuMatMulMin is the default smallest step on the tensor-core products.
// On the H200 (docs/PERFORMANCE.md, LLMSERVE_MATMUL_MIN), with the narrow
// batch tiles and the k range split over the multiprocessors, 8B Q4_K_M
// decoded B=16/32/64 at 1696/2339/3183 tok/s on them against 1340/1641/1858
// on the matrix-vector kernels, 1B at 5624/7991/11333 against
// 5502/7239/8837; at B=8 the matrix-vector kernels stay ahead (1B: 3739
// against 3204).
const gpuMatMulMin = 16

// ropeParams is the model's rotation for the kernels (neox pairs or not):
// its heads, frequencies, the factors of the engine's context and
// LongRoPE's attention factor.
func (e *GPUEngine) ropeParams(neox bool) kernels.RopeParams {
	m := e.m
	return kernels.RopeParams{Heads: m.Heads, HeadDim: m.HeadDim, Dim: m.RopeDim, Base: m.RopeBase, Neox: neox, Factors: e.w.ropeFactors,
		Scale: m.RopeAttnFactor}
}

// useQ16 says whether a step of rows tokens runs its quantized products on
// the 16-bit tensor cores (q16Min).
func (e *GPUEngine) useQ16(rows int) bool { return e.q16Min > 0 && rows >= e.q16Min }

// GPUEngine runs the forward pass of a model on a CUDA device. Weights stay
// in their GGUF types; activations and the KV cache are f32. A step's inputs
// (tokens, positions, sequence slots) live in one device buffer written
// before the step, so a captured graph serves every step of its bucket with
// no node updates: padding tokens carry sequence -1 and touch nothing.
type GPUEngine struct {
	m    *model.Model
	opts GPUOptions
	dev  *kernels.Device
	w    gpuWeights

	bufs   []*cuda.Buffer          // every allocation, freed by Close
	kv     []kernels.DevKVCache    // [layer]
	rope   []*kernels.RopeEpilogue // [layer]: RoPE and the cache write of the Q/K/V product
	s      gpuScratch              // device activations for stepRows tokens
	in     *cuda.Buffer            // step inputs and picked tokens, laid out as hostIn, picked, then (with masks) the masked picks and the masks
	hostIn []uint32                // the step inputs as layout places them
	picked []int32                 // [gpuMaxBatch] tokens the step picked, read back
	// masks says whether constrained rows are picked on the device:
	// sample_mask applies the masks of the flagged
	// rows before sample. hostMask stages them ([gpuMaxBatch][2*maskWords(Vocab)]
	// words; nil without masks), maskAt is their word offset in e.in.
	masks    bool
	hostMask []uint32
	maskAt   int
	layout   stepLayout // where hostIn's inputs lie in e.in
	// stepRows is the most tokens of one step: gpuMaxStep, or gpuMaxBatch
	// in deterministic mode.
	stepRows int
	// matMulMin is the smallest step on the tensor-core products (above
	// stepRows in deterministic mode: never).
	matMulMin int
	// q16Min is the smallest step, in tokens, whose quantized products
	// take the 16-bit tensor-core path (GPUOptions.MatMulQ16Min; 0: never).
	q16Min int
	// prefill says whether steps over gpuMaxBatch tokens run attention on
	// the tensor cores (kernels.AttentionPrefill takes the head size);
	// tiles and tileRows describe the current step's tile table (in e.in).
	prefill         bool
	tiles, tileRows int
	logits          []float32           // [gpuMaxBatch*Vocab] logits of the graph run in check mode
	check           []float32           // [gpuMaxBatch*Vocab] logits of the eager run in check mode
	buckets         Buckets             // the step sizes chunks are padded to (GPUOptions.Buckets)
	graphs          map[int]*cuda.Graph // by bucket, captured on first use; nil for a bucket whose capture failed
	capturing       bool                // a graph's capture is under way (graph): the step queued must read nothing back (moeGroupedStep)
	overlap         bool                // kernels start before the one ahead has finished (GPUOptions.NoOverlap)
	stats           gpuGraphStats
	exec            *gpuExec  // the description's executor (gpu_exec_cuda.go) for a model the fused layer does not take; nil otherwise
	paged           *gpuPaged // the paged f16 KV pool (GPUOptions.Paged); nil: the f32 cache of e.kv

	// beforeStep, when set, is queued first in every step (tests inject
	// operations with it).
	beforeStep func(B int) error
}

// gpuScratch holds device activations, each with stepRows rows (logits
// and the output rows gpuMaxBatch); a step of B tokens uses the first B.
type gpuScratch struct {
	x, xn    kernels.DevF32 // [B, Embd] residual stream, and its normalized rows (tensor-core steps)
	xw       kernels.DevF32 // [gpuMaxBatch, Embd] the wanted rows of x (steps over gpuMaxBatch)
	q, att   kernels.DevF32 // [B, Heads*HeadDim]
	k, v     kernels.DevF32 // [B, KVHeads*HeadDim]
	gate, up kernels.DevF32 // [B, FFN]
	logits   kernels.DevF32 // [gpuMaxBatch, Vocab]
	attPart  kernels.DevF32 // attention partial results (kernels.AttentionScratch floats for gpuMaxBatch rows)
	mm       cuda.DevPtr    // rounded activations of the tensor-core products
	mmBytes  int64          // the size of mm
	tok, pos kernels.DevI32 // [B] views of in
	seq      kernels.DevI32 // [B]
	picks    cuda.DevPtr    // [gpuMaxBatch][kernels.PickWords] view of in
	wanted   kernels.DevI32 // [gpuMaxBatch] view of in: the rows whose logits a step over gpuMaxBatch computes
	tiles    cuda.DevPtr    // [stepRows][4] view of in: the prompt tiles of a step over gpuMaxBatch (kernels.PrefillTile)
	picked   kernels.DevI32 // [gpuMaxBatch] view of in: the picked tokens
	// With masks (GPUEngine.masks): views of in.
	maskRows  kernels.DevI32 // [gpuMaxBatch] nonzero where the row's pick carries a mask
	maskPicks cuda.DevPtr    // [gpuMaxBatch][kernels.PickWords] the picks sample reads after sample_mask
	masks     cuda.DevPtr    // [gpuMaxBatch][maskWords(Vocab)] uint64 masks, 8-byte aligned
}

// optionsFromEnv sets opts.Preview where LLMSERVE_GPU_PREVIEW=1 asks for
// the preview kernels, and opts.MoEDense where LLMSERVE_MOE_GROUPED=0
// turns the expert grouping off.
func optionsFromEnv(opts *GPUOptions) {
	if os.Getenv("LLMSERVE_GPU_PREVIEW") == "1" {
		opts.Preview = true
	}
	if os.Getenv("LLMSERVE_MOE_GROUPED") == "0" {
		opts.MoEDense = true
	}
}

// NewGPUEngine uploads m to CUDA device opts.Device.
func NewGPUEngine(m *model.Model, opts GPUOptions) (*GPUEngine, error) {
	if opts.Context <= 0 {
		opts.Context = m.CtxTrain
	}
	if opts.MaxSeqs <= 0 {
		opts.MaxSeqs = 1
	}
	optionsFromEnv(&opts)
	if os.Getenv("LLMSERVE_GRAPH_CHECK") == "1" {
		opts.GraphCheck = true
	}
	if opts.GraphCheck {
		opts.Graphs = true
	}
	buckets := Buckets(opts.Buckets)
	if buckets == nil {
		buckets = DefaultBuckets()
	}
	if err := buckets.Validate(); err != nil {
		return nil, fmt.Errorf("decode: cuda: graph buckets %v: %w", opts.Buckets, err)
	}
	if err := gpuSupports(m); err != nil {
		return nil, fmt.Errorf("decode: cuda: %w", err)
	}
	if m.HeadDim > kernels.MaxHeadDim || m.HeadDim%4 != 0 || m.RopeDim > m.HeadDim || m.RopeDim%2 != 0 {
		return nil, fmt.Errorf("decode: cuda: head size %d (rotating %d): %w (a multiple of 4, at most %d)", m.HeadDim, m.RopeDim, model.ErrUnsupported, kernels.MaxHeadDim)
	}
	if m.Heads/m.KVHeads > kernels.MaxGroup {
		return nil, fmt.Errorf("decode: cuda: %d query heads per KV head: %w (at most %d)", m.Heads/m.KVHeads, model.ErrUnsupported, kernels.MaxGroup)
	}
	dev, err := kernels.OpenDevice(opts.Device)
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	dev.SetPreview(opts.Preview)
	e := &GPUEngine{m: m, opts: opts, dev: dev, buckets: buckets, graphs: map[int]*cuda.Graph{}, overlap: dev.SetOverlap(!opts.NoOverlap),
		stepRows: gpuMaxStep, matMulMin: gpuMatMulMin, masks: true}
	if opts.MatMulMin > 0 {
		e.matMulMin = opts.MatMulMin
	}
	if v, err := strconv.Atoi(os.Getenv("LLMSERVE_MATMUL_MIN")); err == nil && v > 0 {
		e.matMulMin = v
	}
	e.q16Min = q16Min(opts.MatMulQ16Min, os.Getenv("LLMSERVE_MATMUL_Q16"))
	if opts.Deterministic {
		e.stepRows, e.matMulMin = gpuMaxBatch, gpuMaxStep+1
	}
	if err := e.init(); err != nil {
		e.Close()
		return nil, fmt.Errorf("decode: cuda: %w", err)
	}
	return e, nil
}

func (e *GPUEngine) init() error {
	m, ctx := e.m, e.dev.Context()
	kvDim := m.KVHeads * m.HeadDim
	cache := kernels.DevKVCache{MaxSeqs: e.opts.MaxSeqs, Ctx: e.opts.Context, KVHeads: m.KVHeads, HeadDim: m.HeadDim}
	// Sizes from the model and the flags are multiplied without overflow
	// before anything is allocated; uploadWeights then checks the total
	// against the device's free memory.
	kvBytes, err := sizeProduct("KV cache", 2, len(m.Layers), e.opts.MaxSeqs, e.opts.Context, kvDim, 4)
	if e.opts.Paged {
		sized := e.opts
		if sized.KVMemory == 0 && sized.KVShare > 0 {
			sized.MaxSeqs = 1 // the upload reserves one context; the share sizes the pool after it
		}
		var l KVLayout
		var d kernels.KVPoolLayout
		if l, d, err = pagedLayout(m, sized); err == nil {
			kvBytes, err = pagedBytes(l, d)
		}
	}
	if err != nil {
		return err
	}
	// The scratch buffers below: stepRows rows of activations and step
	// inputs, gpuMaxBatch rows of logits, output rows, attention partials
	// and picks, and the rounded activations of the products.
	S := e.stepRows
	rowBytes, err := sizeProduct("buffers", 4, S, 2*m.Embd+2*m.Heads*m.HeadDim+2*kvDim+2*m.FFN+3+gpuExecWidth(m, !e.opts.MoEDense))
	if err != nil {
		return err
	}
	outBytes, err := sizeProduct("buffers", 4, gpuMaxBatch, m.Embd+m.Vocab+attentionScratch(m, e.opts, 1)+kernels.PickWords+3+4*S/gpuMaxBatch)
	if err != nil {
		return err
	}
	var maskBytes int64 // the masked picks and the masks, with a word of alignment
	if e.masks {
		if maskBytes, err = sizeProduct("buffers", 4, gpuMaxBatch, kernels.PickWords+2*maskWords(m.Vocab)); err != nil {
			return err
		}
		maskBytes += 4
	}
	mmBytes := kernels.MatMulsScratchBytes(S, max(m.Embd, m.Heads*m.HeadDim, m.FFN))
	bufBytes, err := sizeSum("buffers", rowBytes, outBytes, maskBytes, mmBytes)
	if err != nil {
		return err
	}
	reserve, err := sizeSum("KV cache and buffers", kvBytes, bufBytes)
	if err != nil {
		return err
	}
	// uploadWeights refuses weights plus reserve past the free device
	// memory before it allocates anything.
	w, wbuf, err := uploadWeights(ctx, m, e.opts.Context, reserve, e.opts.Progress)
	if err != nil {
		return err
	}
	e.w = w
	e.bufs = append(e.bufs, wbuf)
	if e.opts.Info != nil {
		free, total, err := ctx.MemInfo()
		if err != nil {
			return err
		}
		e.opts.Info(fmt.Sprintf("device memory: weights %s, KV cache %s, buffers %s; %s free of %s after the weights",
			gib(wbuf.Size()), gib(kvBytes), gib(bufBytes), gib(free), gib(total)))
		switch {
		case e.overlap:
			e.opts.Info("overlapping launches on for single-token steps (programmatic dependent launch)")
		case !e.opts.NoOverlap:
			e.opts.Info("overlapping launches unavailable: they need compute capability 9.0 and a CUDA 12.3 driver")
		}
	}
	if e.opts.Paged {
		if e.opts.KVMemory == 0 && e.opts.KVShare > 0 {
			free, _, err := ctx.MemInfo()
			if err != nil {
				return err
			}
			if e.opts.KVMemory, err = poolShare(free, bufBytes, e.opts.KVShare); err != nil {
				return err
			}
		}
		if err := e.initPaged(); err != nil {
			return err
		}
	}
	for l := 0; l < len(m.Layers) && !e.opts.Paged; l++ {
		c := cache
		kb, err := e.alloc(fmt.Sprintf("blk.%d.cache_k", l), c.Bytes())
		if err != nil {
			return err
		}
		vb, err := e.alloc(fmt.Sprintf("blk.%d.cache_v", l), c.Bytes())
		if err != nil {
			return err
		}
		c.K, c.V = kb.Ptr(), vb.Ptr()
		e.kv = append(e.kv, c)
	}
	qDim, M := m.Heads*m.HeadDim, gpuMaxBatch
	f32 := func(name string, rows, cols int) kernels.DevF32 {
		if err != nil {
			return kernels.DevF32{}
		}
		var b *cuda.Buffer
		if b, err = e.alloc(name, int64(rows)*int64(cols)*4); err != nil {
			return kernels.DevF32{}
		}
		return kernels.DevF32{Ptr: b.Ptr(), Rows: rows, Cols: cols}
	}
	e.s = gpuScratch{
		x: f32("x", S, m.Embd), xn: f32("x normalized", S, m.Embd), xw: f32("output rows", M, m.Embd),
		q: f32("q", S, qDim), att: f32("att", S, qDim),
		k: f32("k", S, kvDim), v: f32("v", S, kvDim),
		gate: f32("gate", S, m.FFN), up: f32("up", S, m.FFN), logits: f32("logits", M, m.Vocab),
		attPart: f32("attention partials", 1, attentionScratch(m, e.opts, M)),
	}
	if err != nil {
		return err
	}
	mm, err := e.alloc("product inputs", mmBytes)
	if err != nil {
		return err
	}
	e.s.mm, e.s.mmBytes = mm.Ptr(), mmBytes
	if err := e.initExec(); err != nil {
		return err
	}
	e.layout = newStepLayout(S, M)
	inWords := e.layout.end
	total := inWords + M
	if e.masks {
		// The masks start 8-byte aligned after the masked picks.
		e.maskAt = inWords + M + kernels.PickWords*M
		e.maskAt += e.maskAt % 2
		total = e.maskAt + 2*maskWords(m.Vocab)*M
		e.hostMask = make([]uint32, 2*maskWords(m.Vocab)*M)
	}
	if e.in, err = e.alloc("step inputs", int64(total)*4); err != nil {
		return err
	}
	at := func(word int) cuda.DevPtr { return e.in.Ptr().Add(4 * int64(word)) }
	l := e.layout
	e.s.tok = kernels.DevI32{Ptr: at(l.tok), Len: S}
	e.s.pos = kernels.DevI32{Ptr: at(l.pos), Len: S}
	e.s.seq = kernels.DevI32{Ptr: at(l.seq), Len: S}
	e.s.picks = at(l.picks)
	e.s.wanted = kernels.DevI32{Ptr: at(l.wanted), Len: M}
	e.s.tiles = at(l.tiles)
	e.s.maskRows = kernels.DevI32{Ptr: at(l.flags), Len: M}
	e.s.picked = kernels.DevI32{Ptr: at(inWords), Len: M}
	if e.masks {
		e.s.maskPicks, e.s.masks = at(inWords+M), at(e.maskAt)
	}
	e.prefill = !e.opts.Deterministic && kernels.PrefillSupports(m.HeadDim)
	e.hostIn, e.picked = make([]uint32, inWords), make([]int32, M)
	rope := e.ropeParams(m.RopeNeox())
	for l := range m.Layers {
		w := &e.w.layers[l]
		var r *kernels.RopeEpilogue
		var err error
		if e.paged == nil {
			r, err = e.dev.NewRopeEpilogue(kernels.RopeStoreOp{Cache: e.kv[l], QNorm: w.vecs[model.AttnQNorm], KNorm: w.vecs[model.AttnKNorm], Eps: m.RMSEps,
				Pos: e.s.pos, Seq: e.s.seq, Rope: rope})
		} else {
			r, err = e.dev.NewPagedRopeEpilogue(kernels.RopeStorePagedOp{Pool: e.paged.pools[l], QNorm: w.vecs[model.AttnQNorm], KNorm: w.vecs[model.AttnKNorm],
				Eps: m.RMSEps, Pos: e.s.pos, Seq: e.s.seq, Rope: rope})
		}
		if err != nil {
			return fmt.Errorf("blk.%d: %w", l, err)
		}
		e.rope = append(e.rope, r)
	}
	if e.opts.GraphCheck {
		e.logits, e.check = make([]float32, M*m.Vocab), make([]float32, M*m.Vocab)
	}
	return e.dev.Sync()
}

// gib formats a byte count in GiB.
func gib(n int64) string { return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30)) }

func (e *GPUEngine) alloc(name string, size int64) (*cuda.Buffer, error) {
	b, err := e.dev.Context().Alloc(name, size)
	if err != nil {
		return nil, err
	}
	e.bufs = append(e.bufs, b)
	return b, nil
}

// VocabSize is the number of logits per token.
func (e *GPUEngine) VocabSize() int { return e.m.Vocab }

// PicksMasks reports whether ForwardPick applies the masks of constrained
// picks (MaskPicker): always on this engine.
func (e *GPUEngine) PicksMasks() bool { return e.masks }

// applies says whether the device picks with p: a pick with a mask needs
// masks on and a mask of the vocabulary's words.
func (e *GPUEngine) applies(p *Pick) bool {
	return p != nil && (p.Mask == nil || e.masks && len(p.Mask) == maskWords(e.m.Vocab))
}

// ContextSize is the number of positions per sequence.
func (e *GPUEngine) ContextSize() int { return e.opts.Context }

// MaxSeqs is the number of sequence slots.
func (e *GPUEngine) MaxSeqs() int { return e.opts.MaxSeqs }

// Close releases the graphs, the device memory and the context.
func (e *GPUEngine) Close() error {
	var errs []error
	for _, g := range e.graphs {
		errs = append(errs, g.Destroy())
	}
	e.graphs = nil
	for _, r := range e.rope {
		errs = append(errs, r.Free())
	}
	e.rope = nil
	for _, b := range e.bufs {
		errs = append(errs, b.Free())
	}
	e.bufs = nil
	if e.dev != nil {
		errs = append(errs, e.dev.Close())
		e.dev = nil
	}
	return errors.Join(errs...)
}

// Forward runs one step over b; see Engine. Batches of more tokens than a
// step holds, or of more than 64 wanted rows, run in chunks, in order.
func (e *GPUEngine) Forward(b *Batch, out []float32) error {
	return e.ForwardPick(b, nil, nil, out)
}

// ForwardPick runs one step over b and picks tokens on the device; see
// Picker. Only the picked token ids are copied back, and the logits of the
// rows left to the host. With nil picks every wanted row's logits are
// copied (Forward).
func (e *GPUEngine) ForwardPick(b *Batch, picks []*Pick, toks []int32, logits []float32) error {
	if err := b.check(e.m.Vocab, e.opts.Context, e.opts.MaxSeqs, logits); err != nil {
		return err
	}
	if picks != nil && (len(picks) != b.wanted() || len(toks) < len(picks)) {
		return fmt.Errorf("decode: cuda: %d picks and room for %d tokens for %d rows of logits", len(picks), len(toks), b.wanted())
	}
	return e.dev.Context().Do(func() error {
		r := 0 // wanted rows before the chunk
		for lo := 0; lo < b.Len(); {
			hi := e.chunkEnd(b, lo)
			chunk := Batch{Tokens: b.Tokens[lo:hi], Pos: b.Pos[lo:hi], Seq: b.Seq[lo:hi], Logits: b.Logits[lo:hi], Blocks: b.Blocks}
			n, err := e.chunk(&chunk, picks, toks, logits, r)
			if err != nil {
				return fmt.Errorf("decode: cuda: %w", err)
			}
			r, lo = r+n, hi
		}
		return nil
	})
}

// chunkEnd is the end of the step that starts at token lo of b.
func (e *GPUEngine) chunkEnd(b *Batch, lo int) int { return stepEnd(b, lo, e.stepRows, gpuMaxBatch) }

// bucket is the step size that runs n tokens: the smallest graph bucket
// that holds them, n itself above the largest bucket.
func (e *GPUEngine) bucket(n int) int {
	if i, ok := e.buckets.Choose(n); ok {
		return e.buckets[i]
	}
	return n
}

// wide says whether a step of B tokens is over what the matrix-vector
// kernels and the graphs take (gpuMaxBatch rows).
func wide(B int) bool { return B > gpuMaxBatch }

// gathered says whether a step of B tokens, nw of them wanting logits,
// runs the output projection for those rows only (gathered first, eagerly;
// the wideStep path): every wide step, and a step of more than 8 tokens of
// which half or fewer want logits (a prompt chunk, say), whose other rows'
// projections would cost more than the graph saves. Its picks and logits
// go by rank among the wanted rows.
func gathered(B, nw int) bool { return wide(B) || (B > 8 && 2*nw <= B) }

// chunk runs at most stepRows tokens (at most gpuMaxBatch wanted) whose
// wanted rows are numbered from r0: it reads back the picked tokens into
// toks and copies the logits of the rows not picked to logits. It returns
// the number of wanted rows.
func (e *GPUEngine) chunk(b *Batch, picks []*Pick, toks []int32, logits []float32, r0 int) (int, error) {
	n := b.Len()
	B, err := e.writeInputs(b, picks, r0)
	if err != nil {
		return 0, err
	}
	nw := b.wanted()
	e.stats.padded(B, n)
	gather := gathered(B, nw)
	switch {
	case gather:
		e.countEager(B)
		if err := e.wideStep(B, nw); err != nil {
			return 0, err
		}
	case B > e.buckets.Max(): // more tokens than a graph holds
		if err := e.eagerStep(B); err != nil {
			return 0, err
		}
	case e.opts.GraphCheck:
		if err := e.checkStep(B, n); err != nil {
			return 0, err
		}
	case e.opts.Graphs:
		if err := e.graphStep(B); err != nil {
			return 0, err
		}
	default:
		if err := e.eagerStep(B); err != nil {
			return 0, err
		}
	}
	// out maps each wanted row to its row of logits and picks on the
	// device: its batch row, or its rank among the wanted rows in a
	// gathered step.
	out := func(i, rank int) int {
		if gather {
			return rank
		}
		return i
	}
	ctx, V := e.dev.Context(), e.m.Vocab
	if picks != nil && nw > 0 {
		if err := ctx.ReadAt(e.s.picked.Ptr, cuda.AsBytes(e.picked[:min(n, gpuMaxBatch)])); err != nil {
			return 0, err
		}
	}
	r := r0
	for i := 0; i < n; i++ {
		if !b.Logits[i] {
			continue
		}
		if picks != nil {
			toks[r] = -1
			if e.applies(picks[r]) {
				toks[r] = e.picked[out(i, r-r0)]
			}
		}
		r++
	}
	// Copy each run of consecutive rows left to the host straight into
	// logits.
	r = r0
	for i := 0; i < n; {
		if !b.Logits[i] || (picks != nil && toks[r] >= 0) {
			if b.Logits[i] {
				r++
			}
			i++
			continue
		}
		j, k := i, r
		for j < n && b.Logits[j] && (picks == nil || toks[k] < 0) {
			j, k = j+1, k+1
		}
		src := e.s.logits.Ptr.Add(int64(out(i, r-r0)) * int64(V) * 4)
		if err := ctx.ReadAt(src, cuda.AsBytes(logits[r*V:k*V])); err != nil {
			return 0, err
		}
		i, r = j, k
	}
	if r == r0 {
		return 0, e.dev.Sync()
	}
	return r - r0, nil
}

// writeInputs queues the upload of b's tokens, positions, sequences and
// picks (wanted rows numbered from r0), padded to its bucket, which it
// returns. A gathered step's picks go by rank among the wanted rows,
// beside the list of those rows. The masks of masked picks go to the same slots
// of the mask region, in one copy over the slots from the first masked
// row to the last.
func (e *GPUEngine) writeInputs(b *Batch, picks []*Pick, r0 int) (int, error) {
	n := b.Len()
	B := e.bucket(n)
	gather := gathered(B, b.wanted())
	l, M := e.layout, gpuMaxBatch
	words := 2 * maskWords(e.m.Vocab) // uint32 words of a mask
	maskLo, maskHi := M, -1           // masked slots
	r := r0
	for i := 0; i < M; i++ {
		kernels.Pick{Mode: kernels.PickNone}.Encode(e.hostIn[l.picks+i*kernels.PickWords:])
		e.hostIn[l.flags+i] = 0
	}
	for i := 0; i < B; i++ {
		tok, pos, seq := int32(0), int32(0), int32(-1)
		if i < n {
			tok, pos, seq = b.Tokens[i], b.Pos[i], b.Seq[i]
			if b.Logits[i] {
				slot := i
				if gather {
					slot = r - r0
					e.hostIn[l.wanted+slot] = uint32(i)
				}
				if picks != nil && e.applies(picks[r]) {
					devicePick(picks[r]).Encode(e.hostIn[l.picks+slot*kernels.PickWords:])
					if mask := picks[r].Mask; mask != nil {
						e.hostIn[l.flags+slot] = 1
						for w, bits := range mask {
							e.hostMask[slot*words+2*w], e.hostMask[slot*words+2*w+1] = uint32(bits), uint32(bits>>32)
						}
						maskLo, maskHi = min(maskLo, slot), max(maskHi, slot)
					}
				}
				r++
			}
		}
		e.hostIn[l.tok+i], e.hostIn[l.pos+i], e.hostIn[l.seq+i] = uint32(tok), uint32(pos), uint32(seq)
	}
	e.tiles, e.tileRows = 0, 0
	if wide(B) && e.prefill {
		tiles := kernels.PrefillTiles(b.Seq, b.Pos, kernels.PrefillTileRows)
		table, rows := kernels.PrefillTileTable(tiles)
		for i, w := range table {
			e.hostIn[l.tiles+i] = uint32(w)
		}
		e.tiles, e.tileRows = len(tiles), rows
		if err := e.in.Write(4*int64(l.tiles), cuda.AsBytes(e.hostIn[l.tiles:l.tiles+len(table)])); err != nil {
			return 0, err
		}
	}
	if e.paged != nil {
		if err := e.writeTables(b); err != nil {
			return 0, err
		}
	}
	if maskHi >= 0 {
		if err := e.in.Write(4*int64(e.maskAt+maskLo*words), cuda.AsBytes(e.hostMask[maskLo*words:(maskHi+1)*words])); err != nil {
			return 0, err
		}
	}
	// Everything but the prompt tiles, which only a step that reads them
	// writes.
	return B, e.in.Write(0, cuda.AsBytes(e.hostIn[:l.tiles]))
}

// stepLayout places the step inputs in e.in, in 4-byte words: tokens,
// positions and sequences (stepRows each), the picks (gpuMaxBatch ×
// kernels.PickWords), the wanted rows of a wide step and the mask flags
// (gpuMaxBatch each), then the prompt tiles (stepRows × 4) last, so that
// a step that reads no tiles uploads words [0, tiles) alone.
type stepLayout struct{ tok, pos, seq, picks, wanted, flags, tiles, end int }

func newStepLayout(S, M int) stepLayout {
	l := stepLayout{tok: 0, pos: S, seq: 2 * S, picks: 3 * S}
	l.wanted = l.picks + kernels.PickWords*M
	l.flags = l.wanted + M
	l.tiles = l.flags + M
	l.end = l.tiles + 4*S
	return l
}

// devicePick is the kernels' form of p.
func devicePick(p *Pick) kernels.Pick {
	mode := kernels.PickRandom
	if p.Temperature <= 0 {
		mode = kernels.PickGreedy
	}
	return kernels.Pick{Mode: mode, Temperature: p.Temperature, TopK: p.TopK, TopP: p.TopP, MinP: p.MinP, U: p.U}
}

// eagerStep launches the kernels of a step of B tokens one by one.
func (e *GPUEngine) eagerStep(B int) error {
	e.countEager(B)
	return e.step(B)
}

// countEager counts a step of B tokens run by eager launches, in the
// totals and in its bucket's figures.
func (e *GPUEngine) countEager(B int) {
	e.stats.eagerSteps.Add(1)
	if s := e.stats.of(B); s != nil {
		s.eagerSteps.Add(1)
	}
}
