//go:build cuda

package decode

import (
	"fmt"

	"llmserve/kernels"
	"llmserve/model"
)

// gpuOverlapTokens is the largest step whose kernels start before the one
// ahead has finished. It gains single-token steps about 8% (the next kernel
// is launched and its first weights are on the way while the last one
// drains); steps of 2 tokens measured the same either way, and steps of 4
// to 64 tokens 5-9% slower with it.
const gpuOverlapTokens = 1

// step queues the forward pass of B tokens (the first B rows of every
// scratch array, inputs read from e.in) on the device: the same launches
// run eagerly or under graph capture. Each layer is six launches: the
// normalized Q/K/V product, RoPE with the cache write, attention (two
// kernels), the output projection added to the residual stream, the
// normalized gate/up product with SwiGLU, and the down projection added to
// the residual stream.
func (e *GPUEngine) step(B int) error {
	m, s, d := e.m, &e.s, e.dev
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
	for l := range e.w.layers {
		if err := e.layer(l, B, x, pos, seq); err != nil {
			return fmt.Errorf("blk.%d: %w", l, err)
		}
	}
	if err := e.op(-1, "output_norm+output", func() error {
		return d.MatVecFused(kernels.MatVecOp{
			Segs: []kernels.MatVecSeg{{W: e.w.output, Y: s.logits.Slice(0, B)}},
			X:    x, Norm: e.w.outputNorm, Eps: m.RMSEps,
		})
	}); err != nil {
		return err
	}
	return e.op(-1, "sample", func() error {
		return d.Sample(s.logits.Slice(0, B), s.picks, kernels.DevI32{Ptr: s.picked.Ptr, Len: B})
	})
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

// layer queues transformer block l; errors name the op after the tensors
// it reads, as llama.cpp names them.
func (e *GPUEngine) layer(l, B int, x kernels.DevF32, pos, seq kernels.DevI32) error {
	m, s, d, w := e.m, &e.s, e.dev, &e.w.layers[l]
	q, k, v := s.q.Slice(0, B), s.k.Slice(0, B), s.v.Slice(0, B)
	att, gate, up := s.att.Slice(0, B), s.gate.Slice(0, B), s.up.Slice(0, B)
	// The rotation and the cache write run inside the product where the
	// kernels allow, else as a launch of their own right after it.
	if err := e.op(l, "attn_norm+qkv+rope+cache_store", func() error {
		return d.MatVecFused(kernels.MatVecOp{
			Segs: []kernels.MatVecSeg{{W: w.mats[model.AttnQ], Y: q, Bias: w.vecs[model.AttnQBias]}, {W: w.mats[model.AttnK], Y: k, Bias: w.vecs[model.AttnKBias]}, {W: w.mats[model.AttnV], Y: v, Bias: w.vecs[model.AttnVBias]}},
			X:    x, Norm: w.vecs[model.AttnNorm], Eps: m.RMSEps, Rope: e.rope[l],
		})
	}); err != nil {
		return err
	}
	if err := e.op(l, "attention", func() error { return d.Attention(e.kv[l], q, att, m.Heads, pos, seq, s.attPart) }); err != nil {
		return err
	}
	if err := e.op(l, "attn_output+residual", func() error {
		return d.MatVecFused(kernels.MatVecOp{Segs: []kernels.MatVecSeg{{W: w.mats[model.AttnOut], Y: x}}, X: att, Accumulate: true})
	}); err != nil {
		return err
	}
	if err := e.op(l, "ffn_norm+gate_up+swiglu", func() error {
		return d.MatVecFused(kernels.MatVecOp{
			Segs: []kernels.MatVecSeg{{W: w.mats[model.FFNGate], Y: gate}, {W: w.mats[model.FFNUp], Y: up}},
			X:    x, Norm: w.vecs[model.FFNNorm], Eps: m.RMSEps, GLU: true,
		})
	}); err != nil {
		return err
	}
	return e.op(l, "ffn_down+residual", func() error {
		return d.MatVecFused(kernels.MatVecOp{Segs: []kernels.MatVecSeg{{W: w.mats[model.FFNDown], Y: x}}, X: gate, Accumulate: true})
	})
}
