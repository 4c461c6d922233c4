package decode

import (
	"fmt"
	"math"
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
	// Progress, when set, is told how far reading the weights into memory
	// has come. They are read once at load, like llama.cpp's prefetch, so
	// the first request does not wait for the disk.
	Progress Progress
}

// CPUEngine runs the forward pass of a model on the CPU with the pure-Go
// kernels. It is the reference the GPU engine is tested against.
type CPUEngine struct {
	m    *model.Model
	pool *kernels.Pool
	w    cpuWeights
	opts CPUOptions

	kvDim  int
	kCache [][]float32 // [layer][seq*Context*kvDim + pos*kvDim + i]
	vCache [][]float32 // same layout as kCache

	ropeFreqs []float32 // [RopeDim/2] llama3 frequency divisors, or nil
	s         cpuScratch
	pageSum   byte // sum of the bytes prefault read, kept so the reads stay
}

// cpuWeights holds the model's matrices in the kernels' form.
type cpuWeights struct {
	tokEmbd, output kernels.Matrix
	outputNorm      []float32
	layers          []cpuLayer
}

type cpuLayer struct {
	attnNorm, ffnNorm   []float32
	q, k, v, o          kernels.Matrix
	qBias, kBias, vBias []float32 // nil when absent
	qNorm, kNorm        []float32 // nil when absent
	gate, up, down      kernels.Matrix
}

// cpuScratch holds the activations of one chunk of at most MaxBatch tokens.
type cpuScratch struct {
	x      []float32 // [B, Embd] residual stream
	xn     []float32 // [B, Embd] normalized input of a sub-block
	q      []float32 // [B, Heads*HeadDim]
	k, v   []float32 // [B, kvDim]
	att    []float32 // [B, Heads*HeadDim] attention output
	proj   []float32 // [B, Embd] output of attn_output / ffn_down
	gate   []float32 // [B, FFN]
	up     []float32 // [B, FFN]
	scores []float32 // [Threads, Context] attention scores per worker
	rows   []float32 // [B, Embd] normalized rows whose logits are wanted
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
	e := &CPUEngine{m: m, opts: opts, kvDim: m.KVHeads * m.HeadDim}
	if err := checkCPUMemory(m, opts, availableMemory()); err != nil {
		return nil, err
	}
	e.pageSum = prefault(m, opts.Progress)
	var err error
	if e.w, err = loadCPUWeights(m); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if e.ropeFreqs, err = ropeFactors(m); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	cacheLen := opts.MaxSeqs * opts.Context * e.kvDim
	e.kCache = make([][]float32, len(m.Layers))
	e.vCache = make([][]float32, len(m.Layers))
	for l := range e.kCache {
		e.kCache[l] = make([]float32, cacheLen)
		e.vCache[l] = make([]float32, cacheLen)
	}
	B, qDim := opts.MaxBatch, m.Heads*m.HeadDim
	e.s = cpuScratch{
		x: make([]float32, B*m.Embd), xn: make([]float32, B*m.Embd),
		q: make([]float32, B*qDim), k: make([]float32, B*e.kvDim), v: make([]float32, B*e.kvDim),
		att: make([]float32, B*qDim), proj: make([]float32, B*m.Embd),
		gate: make([]float32, B*m.FFN), up: make([]float32, B*m.FFN),
		scores: make([]float32, opts.Threads*opts.Context), rows: make([]float32, B*m.Embd),
	}
	e.pool = kernels.NewPool(opts.Threads)
	return e, nil
}

// checkCPUMemory computes, without overflow, the bytes of the KV cache and
// the scratch buffers NewCPUEngine allocates, and refuses them when they
// exceed avail (< 0: unknown). The weights stay in the file's mapping.
func checkCPUMemory(m *model.Model, opts CPUOptions, avail int64) error {
	kvDim, qDim := m.KVHeads*m.HeadDim, m.Heads*m.HeadDim
	kv, err := sizeProduct("decode: KV cache", 2, len(m.Layers), opts.MaxSeqs, opts.Context, kvDim, 4)
	if err != nil {
		return err
	}
	rows, err := sizeProduct("decode: activations", opts.MaxBatch, 4*m.Embd+2*qDim+2*kvDim+2*m.FFN, 4)
	if err != nil {
		return err
	}
	scores, err := sizeProduct("decode: attention scores", opts.Threads, opts.Context, 4)
	if err != nil {
		return err
	}
	need, err := sizeSum("decode: CPU buffers", kv, rows, scores)
	if err != nil {
		return err
	}
	return checkFits(fmt.Sprintf("decode: KV cache of %d layers × %d sequences × %d positions × %d values and buffers",
		len(m.Layers), opts.MaxSeqs, opts.Context, kvDim), need, avail)
}

func loadCPUWeights(m *model.Model) (cpuWeights, error) {
	var w cpuWeights
	var err error
	mat := func(t *model.Tensor) kernels.Matrix {
		if err != nil {
			return kernels.Matrix{}
		}
		var mx kernels.Matrix
		mx, err = kernels.NewMatrix(t.Type, t.Rows(), int(t.Dims[0]), t.Data)
		if err != nil {
			err = fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		return mx
	}
	vec := func(t *model.Tensor) []float32 {
		if err != nil || t == nil {
			return nil
		}
		var v []float32
		v, err = f32s(t)
		return v
	}
	w.tokEmbd, w.output, w.outputNorm = mat(m.TokEmbd), mat(m.Output), vec(m.OutputNorm)
	w.layers = make([]cpuLayer, len(m.Layers))
	for i := range m.Layers {
		l := &m.Layers[i]
		w.layers[i] = cpuLayer{
			attnNorm: vec(l.AttnNorm), ffnNorm: vec(l.FFNNorm),
			q: mat(l.Q), k: mat(l.K), v: mat(l.V), o: mat(l.O),
			qBias: vec(l.QBias), kBias: vec(l.KBias), vBias: vec(l.VBias),
			qNorm: vec(l.QNorm), kNorm: vec(l.KNorm),
			gate: mat(l.Gate), up: mat(l.Up), down: mat(l.Down),
		}
	}
	return w, err
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

// ropeFactors returns the per-frequency divisors of the rotation angles:
// llama3's rope_freqs times the linear position scale's inverse (dividing
// every angle by 1/scale is scaling every position by scale), or nil when
// both are absent.
func ropeFactors(m *model.Model) ([]float32, error) {
	if m.RopeFreqs == nil && m.RopeScale == 1 {
		return nil, nil
	}
	ff := make([]float32, m.RopeDim/2)
	for i := range ff {
		ff[i] = 1
	}
	if m.RopeFreqs != nil {
		var err error
		if ff, err = f32s(m.RopeFreqs); err != nil {
			return nil, err
		}
	}
	for i := range ff {
		ff[i] /= m.RopeScale
	}
	return ff, nil
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

// Forward runs one step over b; see Engine.
func (e *CPUEngine) Forward(b *Batch, out []float32) error {
	if err := b.check(e.m.Vocab, e.opts.Context, e.opts.MaxSeqs, out); err != nil {
		return err
	}
	return b.chunks(e.opts.MaxBatch, e.m.Vocab, out, e.step)
}

// step runs a chunk of at most MaxBatch tokens and returns the number of
// logit rows it wrote.
func (e *CPUEngine) step(b *Batch, out []float32) (int, error) {
	m, s, n := e.m, &e.s, b.Len()
	embd := m.Embd
	for i, tok := range b.Tokens {
		if err := kernels.Row(e.w.tokEmbd, int(tok), s.x[i*embd:(i+1)*embd]); err != nil {
			return 0, fmt.Errorf("decode: token_embd: %w", err)
		}
	}
	for l := range e.w.layers {
		if err := e.layer(l, b); err != nil {
			return 0, fmt.Errorf("decode: blk.%d: %w", l, err)
		}
	}
	rows := 0
	for i := 0; i < n; i++ {
		if b.Logits[i] {
			kernels.RMSNorm(s.rows[rows*embd:(rows+1)*embd], s.x[i*embd:(i+1)*embd], e.w.outputNorm, m.RMSEps)
			rows++
		}
	}
	if rows == 0 {
		return 0, nil
	}
	if err := kernels.MatMul(e.pool, e.w.output, s.rows[:rows*embd], rows, out[:rows*m.Vocab]); err != nil {
		return 0, fmt.Errorf("decode: output: %w", err)
	}
	return rows, nil
}

// layer runs transformer block l over the chunk in e.s.x.
func (e *CPUEngine) layer(l int, b *Batch) error {
	m, s, w, n := e.m, &e.s, &e.w.layers[l], b.Len()
	embd, qDim, kvDim := m.Embd, m.Heads*m.HeadDim, e.kvDim
	for i := 0; i < n; i++ {
		kernels.RMSNorm(s.xn[i*embd:(i+1)*embd], s.x[i*embd:(i+1)*embd], w.attnNorm, m.RMSEps)
	}
	if err := e.matmuls(n, s.xn[:n*embd], []kernels.Matrix{w.q, w.k, w.v}, [][]float32{s.q, s.k, s.v}, []string{"attn_q", "attn_k", "attn_v"}); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		q, k, v := s.q[i*qDim:(i+1)*qDim], s.k[i*kvDim:(i+1)*kvDim], s.v[i*kvDim:(i+1)*kvDim]
		if w.qBias != nil {
			kernels.Add(q, w.qBias)
			kernels.Add(k, w.kBias)
			kernels.Add(v, w.vBias)
		}
		if w.qNorm != nil {
			for h := 0; h < m.Heads; h++ {
				kernels.RMSNorm(q[h*m.HeadDim:(h+1)*m.HeadDim], q[h*m.HeadDim:(h+1)*m.HeadDim], w.qNorm, m.RMSEps)
			}
			for h := 0; h < m.KVHeads; h++ {
				kernels.RMSNorm(k[h*m.HeadDim:(h+1)*m.HeadDim], k[h*m.HeadDim:(h+1)*m.HeadDim], w.kNorm, m.RMSEps)
			}
		}
		e.rope(q, m.Heads, b.Pos[i])
		e.rope(k, m.KVHeads, b.Pos[i])
		at := e.cacheOffset(b.Seq[i], b.Pos[i])
		copy(e.kCache[l][at:at+kvDim], k)
		copy(e.vCache[l][at:at+kvDim], v)
	}
	e.attention(l, b)
	if err := kernels.MatMul(e.pool, w.o, s.att[:n*qDim], n, s.proj[:n*embd]); err != nil {
		return fmt.Errorf("attn_output: %w", err)
	}
	kernels.Add(s.x[:n*embd], s.proj[:n*embd])
	for i := 0; i < n; i++ {
		kernels.RMSNorm(s.xn[i*embd:(i+1)*embd], s.x[i*embd:(i+1)*embd], w.ffnNorm, m.RMSEps)
	}
	if err := e.matmuls(n, s.xn[:n*embd], []kernels.Matrix{w.gate, w.up}, [][]float32{s.gate, s.up}, []string{"ffn_gate", "ffn_up"}); err != nil {
		return err
	}
	ffn := s.gate[:n*m.FFN]
	kernels.SwiGLU(ffn, ffn, s.up[:n*m.FFN])
	if err := kernels.MatMul(e.pool, w.down, ffn, n, s.proj[:n*embd]); err != nil {
		return fmt.Errorf("ffn_down: %w", err)
	}
	kernels.Add(s.x[:n*embd], s.proj[:n*embd])
	return nil
}

// matmuls multiplies the same input by several matrices.
func (e *CPUEngine) matmuls(n int, x []float32, ws []kernels.Matrix, ys [][]float32, names []string) error {
	for j, w := range ws {
		if err := kernels.MatMul(e.pool, w, x, n, ys[j][:n*w.Rows]); err != nil {
			return fmt.Errorf("%s: %w", names[j], err)
		}
	}
	return nil
}

// rope rotates the heads of one token at position pos.
func (e *CPUEngine) rope(x []float32, heads int, pos int32) {
	m := e.m
	kernels.RoPE(x, heads, m.HeadDim, m.RopeDim, int(pos), m.RopeBase, m.Arch.RopeNeox, e.ropeFreqs)
}

func (e *CPUEngine) cacheOffset(seq, pos int32) int {
	return (int(seq)*e.opts.Context + int(pos)) * e.kvDim
}

// attention computes softmax(q·K/sqrt(d))·V for every token and head of the
// chunk over positions 0..pos of the token's sequence, spread over workers.
func (e *CPUEngine) attention(l int, b *Batch) {
	m, s := e.m, &e.s
	hd, qDim, group := m.HeadDim, m.Heads*m.HeadDim, m.Heads/m.KVHeads
	scale := float32(1 / math.Sqrt(float64(hd)))
	tasks := b.Len() * m.Heads
	workers := e.opts.Threads
	kc, vc := e.kCache[l], e.vCache[l]
	e.pool.For(workers, func(lo, hi int) {
		for wk := lo; wk < hi; wk++ {
			scores := s.scores[wk*e.opts.Context : (wk+1)*e.opts.Context]
			// Contiguous tasks keep the query heads that share a KV head
			// on one worker, so the cached rows are read once from memory.
			for task := wk * tasks / workers; task < (wk+1)*tasks/workers; task++ {
				i, h := task/m.Heads, task%m.Heads
				q := s.q[i*qDim+h*hd : i*qDim+(h+1)*hd]
				out := s.att[i*qDim+h*hd : i*qDim+(h+1)*hd]
				base := e.cacheOffset(b.Seq[i], 0) + (h/group)*hd
				nPos := int(b.Pos[i]) + 1
				span := (nPos-1)*e.kvDim + hd
				kernels.Dots(scores[:nPos], q, kc[base:base+span], e.kvDim)
				for p := range scores[:nPos] {
					scores[p] *= scale
				}
				kernels.Softmax(scores[:nPos])
				clear(out)
				kernels.Axpys(out, scores[:nPos], vc[base:base+span], e.kvDim)
			}
		}
	})
}
