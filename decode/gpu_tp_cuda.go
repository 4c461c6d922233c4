//go:build cuda

package decode

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	"llmserve/internal/cuda"
	"llmserve/internal/nccl"
	"llmserve/kernels"
	"llmserve/model"
)

// TPGPUOptions sizes a tensor-parallel GPU engine.
type TPGPUOptions struct {
	// GPUOptions applies to every rank; rank r runs on device Device+r.
	// Steps run eagerly for now: Graphs and GraphCheck are ignored.
	GPUOptions
	Ranks   int    // GPUs the model is split over
	NCCLLib string // path of libnccl.so.2; "": nccl.Open's search
}

// TPGPUEngine runs a model split over GPUs as model.TPPlan describes: one
// GPUEngine per rank holding only its shard (its heads and KV cache, its
// feed-forward columns, its vocabulary rows), each driven from its own
// locked OS thread, with an NCCL all-reduce of the embedded rows and after
// attn_output and ffn_down. Its steps run the matrix-vector layer on at
// most gpuMaxBatch tokens, eagerly; each rank's logits come back to the
// host, where Forward gathers them into whole rows.
type TPGPUEngine struct {
	plan    *model.TPPlan
	lib     *nccl.Lib
	ranks   []*tpRank
	vocab   int // the whole model's vocabulary
	context int
	maxSeqs int
}

// tpRank is one GPU's part of a TPGPUEngine.
type tpRank struct {
	r      int
	span   model.Span // the vocabulary rows the rank holds
	e      *GPUEngine
	comm   *nccl.Comm
	part   kernels.DevF32 // [gpuMaxBatch, Embd] attn_output's or ffn_down's partial sums before the all-reduce
	toks   []int32        // [gpuMaxBatch] the chunk's tokens as rows of the rank's token_embd (span.Len(): its zero row)
	logits []float32      // [gpuMaxBatch, span.Len()] the chunk's logits, read back
	jobs   chan func()    // work run in order on the rank's locked OS thread; closed by Close
}

// NewTPGPUEngine splits m over opts.Ranks GPUs and joins them in one NCCL
// communicator.
func NewTPGPUEngine(m *model.Model, opts TPGPUOptions) (*TPGPUEngine, error) {
	optionsFromEnv(&opts.GPUOptions)
	if !opts.Preview {
		return nil, fmt.Errorf("decode: cuda: %d-way tensor parallelism: %w (it has not run on a device yet; LLMSERVE_GPU_PREVIEW=1 enables it)", opts.Ranks, model.ErrUnsupported)
	}
	plan, err := model.PlanTP(&m.Config, opts.Ranks)
	if err != nil {
		return nil, err
	}
	if err := plan.Check(m); err != nil {
		return nil, err
	}
	if err := gpuSupports(m); err != nil {
		return nil, fmt.Errorf("decode: cuda: %w", err)
	}
	if opts.Paged {
		return nil, fmt.Errorf("decode: cuda: the tensor-parallel engine keeps the f32 KV cache: %w", model.ErrUnsupported)
	}
	lib, err := nccl.Open(opts.NCCLLib)
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	ro := opts.GPUOptions
	ro.Graphs, ro.GraphCheck = false, false
	if ro.Context <= 0 {
		ro.Context = m.CtxTrain
	}
	if ro.MaxSeqs <= 0 {
		ro.MaxSeqs = 1
	}
	t := &TPGPUEngine{plan: plan, lib: lib, vocab: m.Vocab, context: ro.Context, maxSeqs: ro.MaxSeqs}
	for r := range opts.Ranks {
		s, err := plan.Shard(m, r)
		if err == nil {
			err = withZeroRow(s)
		}
		if err != nil {
			t.Close()
			return nil, err
		}
		k := &tpRank{r: r, span: plan.VocabSpan(r), jobs: make(chan func())}
		go k.loop()
		t.ranks = append(t.ranks, k)
		k.toks, k.logits = make([]int32, gpuMaxBatch), make([]float32, gpuMaxBatch*k.span.Len())
		o := ro
		o.Device = opts.Device + r
		if err := t.on(k, func() error { return k.open(s, o) }); err != nil {
			t.Close()
			return nil, err
		}
	}
	id, err := lib.UniqueID()
	if err != nil {
		t.Close()
		return nil, fmt.Errorf("decode: %w", err)
	}
	// ncclCommInitRank returns once every rank has joined: the ranks join
	// at once, each from its own thread with its device current.
	if err := t.all(func(k *tpRank) error {
		return k.e.dev.Context().Do(func() error {
			c, err := lib.InitRank(opts.Ranks, id, k.r)
			k.comm = c
			return err
		})
	}); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// loop runs the rank's work on one locked OS thread until Close.
func (k *tpRank) loop() {
	runtime.LockOSThread()
	for job := range k.jobs {
		job()
	}
}

// open uploads the rank's shard s and allocates its partial sums.
func (k *tpRank) open(s *model.Model, o GPUOptions) error {
	e, err := NewGPUEngine(s, o)
	if err != nil {
		return fmt.Errorf("decode: rank %d: %w", k.r, err)
	}
	k.e = e
	// A tied output shares token_embd's device rows, the zero row aside.
	e.w.output.Rows = min(e.w.output.Rows, k.span.Len())
	b, err := e.alloc("tp partial sums", int64(gpuMaxBatch)*int64(s.Embd)*4)
	if err != nil {
		return fmt.Errorf("decode: rank %d: %w", k.r, err)
	}
	k.part = kernels.DevF32{Ptr: b.Ptr(), Rows: gpuMaxBatch, Cols: s.Embd}
	return nil
}

// on runs fn on rank k's thread and waits for it.
func (t *TPGPUEngine) on(k *tpRank, fn func() error) error {
	done := make(chan error, 1)
	k.jobs <- func() { done <- fn() }
	return <-done
}

// all runs fn on every rank's thread at once and waits for all of them.
func (t *TPGPUEngine) all(fn func(k *tpRank) error) error {
	errs := make([]error, len(t.ranks))
	var wg sync.WaitGroup
	for i, k := range t.ranks {
		wg.Add(1)
		k.jobs <- func() {
			defer wg.Done()
			if err := fn(k); err != nil {
				errs[i] = fmt.Errorf("rank %d: %w", k.r, err)
			}
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

// VocabSize is the whole model's number of logits per token.
func (t *TPGPUEngine) VocabSize() int { return t.vocab }

// ContextSize is the number of positions per sequence.
func (t *TPGPUEngine) ContextSize() int { return t.context }

// MaxSeqs is the number of sequence slots.
func (t *TPGPUEngine) MaxSeqs() int { return t.maxSeqs }

// Close destroys the communicators, closes every rank's engine, stops the
// rank threads and unloads NCCL.
func (t *TPGPUEngine) Close() error {
	errs := []error{}
	for _, k := range t.ranks {
		errs = append(errs, t.on(k, func() error {
			var errs []error
			if k.comm != nil {
				errs = append(errs, k.e.dev.Context().Do(k.comm.Destroy))
			}
			if k.e != nil {
				errs = append(errs, k.e.Close())
			}
			return errors.Join(errs...)
		}))
		close(k.jobs)
	}
	t.ranks = nil
	if t.lib != nil {
		errs = append(errs, t.lib.Close())
		t.lib = nil
	}
	return errors.Join(errs...)
}

// Forward runs b in steps of at most gpuMaxBatch tokens on every rank and
// gathers the ranks' vocabulary spans into whole rows of out; see Engine.
func (t *TPGPUEngine) Forward(b *Batch, out []float32) error {
	if err := b.check(t.vocab, t.context, t.maxSeqs, out); err != nil {
		return err
	}
	r0 := 0
	for lo := 0; lo < b.Len(); lo += gpuMaxBatch {
		hi := min(lo+gpuMaxBatch, b.Len())
		c := Batch{Tokens: b.Tokens[lo:hi], Pos: b.Pos[lo:hi], Seq: b.Seq[lo:hi], Logits: b.Logits[lo:hi]}
		if err := t.all(func(k *tpRank) error { return k.chunk(&c) }); err != nil {
			return fmt.Errorf("decode: cuda: %w", err)
		}
		for i, want := range c.Logits {
			if !want {
				continue
			}
			for _, k := range t.ranks {
				w := k.span.Len()
				copy(out[r0*t.vocab+k.span.Lo:r0*t.vocab+k.span.Hi], k.logits[i*w:(i+1)*w])
			}
			r0++
		}
	}
	return nil
}

// chunk runs a step of at most gpuMaxBatch tokens on the rank and reads
// back the logits of its vocabulary span for every token.
func (k *tpRank) chunk(b *Batch) error {
	e := k.e
	return e.dev.Context().Do(func() error {
		n := b.Len()
		for i, tok := range b.Tokens {
			k.toks[i] = shardRow(tok, k.span.Lo, k.span.Hi)
		}
		local := Batch{Tokens: k.toks[:n], Pos: b.Pos, Seq: b.Seq, Logits: b.Logits}
		B, err := e.writeInputs(&local, nil, 0)
		if err != nil {
			return err
		}
		e.stats.eagerSteps.Add(1)
		if err := k.step(B); err != nil {
			return err
		}
		return e.dev.Context().ReadAt(e.s.logits.Ptr, cuda.AsBytes(k.logits[:n*k.span.Len()]))
	})
}

// allReduce sums v over the ranks in place, on the rank's stream (the
// hook after the embedding, attn_output and ffn_down).
func (k *tpRank) allReduce(v kernels.DevF32) error {
	return k.comm.AllReduce(uintptr(v.Ptr), uintptr(v.Ptr), v.Len(), nccl.Float32, nccl.Sum, k.e.dev.Context().StreamHandle())
}

// step queues the rank's forward pass of B ≤ gpuMaxBatch tokens: the
// fused llama layer of GPUEngine.layer, except that attn_output and
// ffn_down write partial sums that are all-reduced before the residual
// add, and the logits of the rank's vocabulary span.
func (k *tpRank) step(B int) error {
	e := k.e
	m, s, d := e.m, &e.s, e.dev
	d.SetOverlap(false)
	x := s.x.Slice(0, B)
	tok := kernels.DevI32{Ptr: s.tok.Ptr, Len: B}
	if err := e.op(-1, "token_embd", func() error { return d.GetRows(e.w.tokEmbd, tok, x) }); err != nil {
		return err
	}
	if err := e.op(-1, "token_embd_all_reduce", func() error { return k.allReduce(x) }); err != nil {
		return err
	}
	for l := range e.w.layers {
		if err := k.layer(l, B, x); err != nil {
			return fmt.Errorf("blk.%d: %w", l, err)
		}
	}
	return e.op(-1, "output_norm+output", func() error {
		return d.MatVecFused(kernels.MatVecOp{
			Segs: []kernels.MatVecSeg{{W: e.w.output, Y: s.logits.Slice(0, B)}},
			X:    x, Norm: e.w.outputNorm, Eps: m.RMSEps,
		})
	})
}

// layer queues block l of the rank's shard.
func (k *tpRank) layer(l, B int, x kernels.DevF32) error {
	e := k.e
	s, d, w := &e.s, e.dev, &e.w.layers[l]
	att, gate, part := s.att.Slice(0, B), s.gate.Slice(0, B), k.part.Slice(0, B)
	reduced := func(name string, product func() error) error {
		if err := e.op(l, name, product); err != nil {
			return err
		}
		if err := e.op(l, name+"_all_reduce", func() error { return k.allReduce(part) }); err != nil {
			return err
		}
		return e.op(l, name+"_residual", func() error { return d.Add(x, part) })
	}
	if err := e.qkvAttention(l, B, x); err != nil {
		return err
	}
	if err := reduced("attn_output", func() error {
		return d.MatVecFused(kernels.MatVecOp{Segs: []kernels.MatVecSeg{{W: w.mats[model.AttnOut], Y: part}}, X: att})
	}); err != nil {
		return err
	}
	if err := e.gateUp(l, B, x); err != nil {
		return err
	}
	return reduced("ffn_down", func() error {
		return d.MatVecFused(kernels.MatVecOp{Segs: []kernels.MatVecSeg{{W: w.mats[model.FFNDown], Y: part}}, X: gate})
	})
}
