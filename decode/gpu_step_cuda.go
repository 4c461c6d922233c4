//go:build cuda

package decode

import (
	"fmt"

	"llmserve/gguf"
	"llmserve/kernels"
	"llmserve/model"
)

// gpuOverlapTokens is the largest step whose kernels start before the one
// ahead has finished. It gains single-token steps about 8% (the next kernel
// is launched and its first weights are on the way while the last one
// drains); steps of 2 tokens measured the same either way, and steps of 4
// to 64 tokens 5-9% slower with it.
const gpuOverlapTokens = 1

// step queues the forward pass of B ≤ gpuMaxBatch tokens (the first B
// rows of every scratch array, inputs read from e.in) on the device: the
// same launches run eagerly or under graph capture. Every row's logits are
// computed and sampled.
func (e *GPUEngine) step(B int) error {
	if err := e.body(B); err != nil {
		return err
	}
	return e.output(e.s.x.Slice(0, B))
}

// wideStep queues the forward pass of a gathered step (gathered) of B
// tokens, of which nw ≤ gpuMaxBatch want logits: those rows (s.wanted) are
// gathered after the last layer, so that the output projection runs for
// them only.
func (e *GPUEngine) wideStep(B, nw int) error {
	m, s, d := e.m, &e.s, e.dev
	if err := e.body(B); err != nil {
		return err
	}
	if nw == 0 {
		return nil
	}
	xw := s.xw.Slice(0, nw)
	if err := e.op(-1, "gather_output_rows", func() error {
		x := kernels.DevMatrix{Type: gguf.TypeF32, Rows: B, Cols: m.Embd, Ptr: s.x.Ptr}
		return d.GetRows(x, kernels.DevI32{Ptr: s.wanted.Ptr, Len: nw}, xw)
	}); err != nil {
		return err
	}
	return e.output(xw)
}

// output queues the output norm and projection of the rows of x (at most
// gpuMaxBatch) into the first rows of the logits, and the picks of those
// rows. The projection runs on the tensor-core products from the step size
// the layers do (matMulMin): on the matrix-vector kernels, which read the
// weights once per 8 rows, it took 1.8 ms of a 64-token step on 8B.
func (e *GPUEngine) output(x kernels.DevF32) error {
	m, s, d, n := e.m, &e.s, e.dev, x.Rows
	if err := e.op(-1, "output_norm+output", func() error {
		seg := kernels.MatVecSeg{W: e.w.output, Y: s.logits.Slice(0, n)}
		if n >= e.matMulMin {
			return d.MatMuls(kernels.MatMulsOp{Segs: []kernels.MatVecSeg{seg}, X: x, Norm: e.w.outputNorm, Eps: m.RMSEps,
				Scratch: s.mm, ScratchBytes: s.mmBytes, Temp: s.xn.Slice(0, n), Q16: e.useQ16(n)})
		}
		return d.MatVecFused(kernels.MatVecOp{Segs: []kernels.MatVecSeg{seg}, X: x, Norm: e.w.outputNorm, Eps: m.RMSEps})
	}); err != nil {
		return err
	}
	if err := e.execOutput(n); err != nil {
		return err
	}
	return e.op(-1, "sample", func() error {
		out := kernels.DevI32{Ptr: s.picked.Ptr, Len: n}
		if e.masks { // the masks of the flagged rows first (sample_mask.cu)
			return d.SampleMasked(s.logits.Slice(0, n), s.picks, kernels.SampleMasks{Flags: s.maskRows, Masks: s.masks, Words: maskWords(m.Vocab), Picks: s.maskPicks}, out)
		}
		return d.Sample(s.logits.Slice(0, n), s.picks, out)
	})
}

// body queues the embedding lookup and every layer of a step of B tokens,
// leaving the residual stream in s.x.
func (e *GPUEngine) body(B int) error {
	s, d := &e.s, e.dev
	d.SetOverlap(e.overlap && B <= gpuOverlapTokens)
	x := s.x.Slice(0, B)
	tok, pos, seq := kernels.DevI32{Ptr: s.tok.Ptr, Len: B}, kernels.DevI32{Ptr: s.pos.Ptr, Len: B}, kernels.DevI32{Ptr: s.seq.Ptr, Len: B}
	if e.beforeStep != nil {
		if err := e.op(-1, "before_step", func() error { return e.beforeStep(B) }); err != nil {
			return err
		}
	}
	if err := e.op(-1, "token_embd", func() error { return d.GetRows(e.w.tokEmbd, tok, x) }); err != nil {
		return err
	}
	if err := e.execInput(B); err != nil {
		return err
	}
	for l := range e.w.layers {
		layer := e.layer
		if B >= e.matMulMin || B > gpuMaxBatch { // the matrix-vector kernels take 64 rows at most
			layer = e.layerMatMul
		}
		if e.exec != nil { // a model the fused layer does not take
			layer = e.execBlock
		}
		if err := layer(l, B, x, pos, seq); err != nil {
			return fmt.Errorf("blk.%d: %w", l, err)
		}
	}
	return nil
}

// op runs one operation of a step: it labels the kernels fn launches (for
// profiles) and names the operation in fn's error.
func (e *GPUEngine) op(layer int, name string, fn func() error) error {
	e.dev.Label(layer, name)
	if err := fn(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// qkvAttention queues the normalized Q/K/V product of block l on the
// matrix-vector kernels, the rotation with the cache write (inside the
// product where the kernels allow, else as a launch of its own right
// after it), and the attention into s.att.
func (e *GPUEngine) qkvAttention(l, B int, x kernels.DevF32) error {
	m, s, d, w := e.m, &e.s, e.dev, &e.w.layers[l]
	q, k, v := s.q.Slice(0, B), s.k.Slice(0, B), s.v.Slice(0, B)
	if err := e.op(l, "attn_norm+qkv+rope+cache_store", func() error {
		return d.MatVecFused(kernels.MatVecOp{
			Segs: []kernels.MatVecSeg{{W: w.mats[model.AttnQ], Y: q, Bias: w.vecs[model.AttnQBias]}, {W: w.mats[model.AttnK], Y: k, Bias: w.vecs[model.AttnKBias]}, {W: w.mats[model.AttnV], Y: v, Bias: w.vecs[model.AttnVBias]}},
			X:    x, Norm: w.vecs[model.AttnNorm], Eps: m.RMSEps, Rope: e.epilogue(l),
		})
	}); err != nil {
		return err
	}
	if e.paged != nil && e.epilogue(l) == nil {
		if err := e.op(l, "rope+cache_store", func() error { return e.ropeStore(l, q, k, v) }); err != nil {
			return err
		}
	}
	return e.op(l, "attention", func() error { return e.attention(l, B) })
}

// layer queues transformer block l; errors name the op after the tensors
// it reads, as llama.cpp names them.
func (e *GPUEngine) layer(l, B int, x kernels.DevF32, pos, seq kernels.DevI32) error {
	s, d, w := &e.s, e.dev, &e.w.layers[l]
	att, gate := s.att.Slice(0, B), s.gate.Slice(0, B)
	if err := e.qkvAttention(l, B, x); err != nil {
		return err
	}
	if err := e.op(l, "attn_output+residual", func() error {
		return d.MatVecFused(kernels.MatVecOp{Segs: []kernels.MatVecSeg{{W: w.mats[model.AttnOut], Y: x}}, X: att, Accumulate: true})
	}); err != nil {
		return err
	}
	if err := e.gateUp(l, B, x); err != nil {
		return err
	}
	return e.op(l, "ffn_down+residual", func() error {
		return d.MatVecFused(kernels.MatVecOp{Segs: []kernels.MatVecSeg{{W: w.mats[model.FFNDown], Y: x}}, X: gate, Accumulate: true})
	})
}

// gateUp queues block l's normalized gate/up product with SwiGLU on the
// matrix-vector kernels, into the first B rows of s.gate.
func (e *GPUEngine) gateUp(l, B int, x kernels.DevF32) error {
	s, w := &e.s, &e.w.layers[l]
	return e.op(l, "ffn_norm+gate_up+swiglu", func() error {
		return e.dev.MatVecFused(kernels.MatVecOp{
			Segs: []kernels.MatVecSeg{{W: w.mats[model.FFNGate], Y: s.gate.Slice(0, B)}, {W: w.mats[model.FFNUp], Y: s.up.Slice(0, B)}},
			X:    x, Norm: w.vecs[model.FFNNorm], Eps: e.m.RMSEps, GLU: true,
		})
	})
}

// layerMatMul queues transformer block l for a step of many tokens, on the
// tensor-core products; each product's input (normalized, or SwiGLU) is
// computed as it is rounded for the product (for 16-bit weights the SwiGLU
// in the gate/up product's epilogue), and the rotation with the cache
// write runs as a launch of its own.
func (e *GPUEngine) layerMatMul(l, B int, x kernels.DevF32, pos, seq kernels.DevI32) error {
	m, s, d, w := e.m, &e.s, e.dev, &e.w.layers[l]
	q, k, v, xn := s.q.Slice(0, B), s.k.Slice(0, B), s.v.Slice(0, B), s.xn.Slice(0, B)
	att, gate, up := s.att.Slice(0, B), s.gate.Slice(0, B), s.up.Slice(0, B)
	op := func(in kernels.DevF32, segs ...kernels.MatVecSeg) kernels.MatMulsOp {
		return kernels.MatMulsOp{Segs: segs, X: in, Scratch: s.mm, ScratchBytes: s.mmBytes, Temp: xn, Q16: e.useQ16(B)}
	}
	if err := e.op(l, "attn_norm+qkv", func() error {
		o := op(x, kernels.MatVecSeg{W: w.mats[model.AttnQ], Y: q, Bias: w.vecs[model.AttnQBias]},
			kernels.MatVecSeg{W: w.mats[model.AttnK], Y: k, Bias: w.vecs[model.AttnKBias]},
			kernels.MatVecSeg{W: w.mats[model.AttnV], Y: v, Bias: w.vecs[model.AttnVBias]})
		o.Norm, o.Eps = w.vecs[model.AttnNorm], m.RMSEps
		return d.MatMuls(o)
	}); err != nil {
		return err
	}
	if err := e.op(l, "rope+cache_store", func() error { return e.ropeStore(l, q, k, v) }); err != nil {
		return err
	}
	if err := e.op(l, "attention", func() error { return e.attention(l, B) }); err != nil {
		return err
	}
	if err := e.op(l, "attn_output+residual", func() error {
		o := op(att, kernels.MatVecSeg{W: w.mats[model.AttnOut], Y: x})
		o.Accumulate = true
		return d.MatMuls(o)
	}); err != nil {
		return err
	}
	// 16-bit weights (HalfGLU): the gate/up launch writes silu(gate)·up
	// rounded for the down product, into gate's buffer (half its bytes).
	fg, fu, fd := w.mats[model.FFNGate], w.mats[model.FFNUp], w.mats[model.FFNDown]
	glu := kernels.HalfGLU(fg, fu, fd)
	upName, downName := "ffn_norm+gate_up", "swiglu+ffn_down+residual"
	if glu {
		upName, downName = "ffn_norm+gate_up+swiglu", "ffn_down+residual"
	}
	if err := e.op(l, upName, func() error {
		o := op(x, kernels.MatVecSeg{W: fg, Y: gate}, kernels.MatVecSeg{W: fu, Y: up})
		o.Norm, o.Eps = w.vecs[model.FFNNorm], m.RMSEps
		if glu {
			o.GLUOut = gate.Ptr
		}
		return d.MatMuls(o)
	}); err != nil {
		return err
	}
	return e.op(l, downName, func() error {
		o := op(gate, kernels.MatVecSeg{W: fd, Y: x})
		o.Accumulate = true
		if glu {
			o.Rounded = gate.Ptr // gate gives the shape
		} else {
			o.Up, o.Temp = up, gate
		}
		return d.MatMuls(o)
	})
}

// attention queues layer l's attention for a step of B tokens: on the
// tensor cores over the step's prompt tiles for a step over gpuMaxBatch
// where the kernels take the head size, else on the decode kernel in
// pieces of at most gpuMaxBatch rows (the partial results' scratch holds
// that many).
func (e *GPUEngine) attention(l, B int) error {
	if e.paged != nil {
		return e.attentionPaged(l, B)
	}
	s := &e.s
	if wide(B) && e.prefill {
		return e.dev.AttentionPrefill(kernels.AttentionPrefillOp{Cache: e.kv[l], Q: s.q.Slice(0, B), Out: s.att.Slice(0, B), Heads: e.m.Heads,
			Tiles: s.tiles, NumTiles: e.tiles, MaxRows: e.tileRows})
	}
	for lo := 0; lo < B; lo += gpuMaxBatch {
		n := min(gpuMaxBatch, B-lo)
		pos := kernels.DevI32{Ptr: s.pos.Ptr.Add(4 * int64(lo)), Len: n}
		seq := kernels.DevI32{Ptr: s.seq.Ptr.Add(4 * int64(lo)), Len: n}
		if err := e.dev.Attention(e.kv[l], s.q.Slice(lo, lo+n), s.att.Slice(lo, lo+n), e.m.Heads, pos, seq, s.attPart); err != nil {
			return err
		}
	}
	return nil
}
