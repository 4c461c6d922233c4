//go:build cuda

package decode

import (
	"fmt"

	"llmserve/kernels"
)

// step queues the forward pass of B tokens (the first B rows of every
// scratch array, inputs read from e.in) on the device: the same launches
// run eagerly or under graph capture.
func (e *GPUEngine) step(B int) error {
	m, s, d := e.m, &e.s, e.dev
	x, xn := s.x.Slice(0, B), s.xn.Slice(0, B)
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
		if err := e.layer(l, B, x, xn, pos, seq); err != nil {
			return fmt.Errorf("blk.%d: %w", l, err)
		}
	}
	if err := e.op(-1, "output_norm", func() error { return d.RMSNorm(x, e.w.outputNorm, xn, m.RMSEps) }); err != nil {
		return err
	}
	return e.op(-1, "output", func() error { return d.MatVec(e.w.output, xn, s.logits.Slice(0, B)) })
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

// layer queues transformer block l; errors name the op as llama.cpp names
// its tensors.
func (e *GPUEngine) layer(l, B int, x, xn kernels.DevF32, pos, seq kernels.DevI32) error {
	m, s, d, w := e.m, &e.s, e.dev, &e.w.layers[l]
	q, k, v := s.q.Slice(0, B), s.k.Slice(0, B), s.v.Slice(0, B)
	att, proj := s.att.Slice(0, B), s.proj.Slice(0, B)
	gate, up := s.gate.Slice(0, B), s.up.Slice(0, B)
	if err := e.op(l, "attn_norm", func() error { return d.RMSNorm(x, w.attnNorm, xn, m.RMSEps) }); err != nil {
		return err
	}
	if err := e.op(l, "attn_q", func() error { return d.MatVec(w.q, xn, q) }); err != nil {
		return err
	}
	if err := e.op(l, "attn_k", func() error { return d.MatVec(w.k, xn, k) }); err != nil {
		return err
	}
	if err := e.op(l, "attn_v", func() error { return d.MatVec(w.v, xn, v) }); err != nil {
		return err
	}
	if w.qBias.Cols > 0 {
		if err := e.op(l, "attn_q_bias", func() error { return d.AddBias(q, w.qBias) }); err != nil {
			return err
		}
		if err := e.op(l, "attn_k_bias", func() error { return d.AddBias(k, w.kBias) }); err != nil {
			return err
		}
		if err := e.op(l, "attn_v_bias", func() error { return d.AddBias(v, w.vBias) }); err != nil {
			return err
		}
	}
	if w.qNorm.Cols > 0 {
		qh := kernels.DevF32{Ptr: q.Ptr, Rows: B * m.Heads, Cols: m.HeadDim}
		if err := e.op(l, "attn_q_norm", func() error { return d.RMSNorm(qh, w.qNorm, qh, m.RMSEps) }); err != nil {
			return err
		}
		kh := kernels.DevF32{Ptr: k.Ptr, Rows: B * m.KVHeads, Cols: m.HeadDim}
		if err := e.op(l, "attn_k_norm", func() error { return d.RMSNorm(kh, w.kNorm, kh, m.RMSEps) }); err != nil {
			return err
		}
	}
	rope := kernels.RopeParams{Heads: m.Heads, HeadDim: m.HeadDim, Dim: m.RopeDim, Base: m.RopeBase, Neox: m.Arch.RopeNeox, Factors: e.w.ropeFactors}
	if err := e.op(l, "rope_q", func() error { return d.RoPE(q, pos, rope) }); err != nil {
		return err
	}
	rope.Heads = m.KVHeads
	if err := e.op(l, "rope_k", func() error { return d.RoPE(k, pos, rope) }); err != nil {
		return err
	}
	if err := e.op(l, "cache_store", func() error { return d.KVStore(e.kv[l], k, v, pos, seq) }); err != nil {
		return err
	}
	if err := e.op(l, "attention", func() error { return d.Attention(e.kv[l], q, att, m.Heads, pos, seq, s.attPart) }); err != nil {
		return err
	}
	if err := e.op(l, "attn_output", func() error { return d.MatVec(w.o, att, proj) }); err != nil {
		return err
	}
	if err := e.op(l, "attn_residual", func() error { return d.Add(x, proj) }); err != nil {
		return err
	}
	if err := e.op(l, "ffn_norm", func() error { return d.RMSNorm(x, w.ffnNorm, xn, m.RMSEps) }); err != nil {
		return err
	}
	if err := e.op(l, "ffn_gate", func() error { return d.MatVec(w.gate, xn, gate) }); err != nil {
		return err
	}
	if err := e.op(l, "ffn_up", func() error { return d.MatVec(w.up, xn, up) }); err != nil {
		return err
	}
	if err := e.op(l, "ffn_swiglu", func() error { return d.SwiGLU(gate, up, gate) }); err != nil {
		return err
	}
	if err := e.op(l, "ffn_down", func() error { return d.MatVec(w.down, gate, proj) }); err != nil {
		return err
	}
	if err := e.op(l, "ffn_residual", func() error { return d.Add(x, proj) }); err != nil {
		return err
	}
	return nil
}
