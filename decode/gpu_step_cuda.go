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
	if err := d.GetRows(e.w.tokEmbd, tok, x); err != nil {
		return fmt.Errorf("token_embd: %w", err)
	}
	for l := range e.w.layers {
		if err := e.layer(l, B, x, xn, pos, seq); err != nil {
			return fmt.Errorf("blk.%d: %w", l, err)
		}
	}
	if err := d.RMSNorm(x, e.w.outputNorm, xn, m.RMSEps); err != nil {
		return fmt.Errorf("output_norm: %w", err)
	}
	if err := d.MatVec(e.w.output, xn, s.logits.Slice(0, B)); err != nil {
		return fmt.Errorf("output: %w", err)
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
	if err := d.RMSNorm(x, w.attnNorm, xn, m.RMSEps); err != nil {
		return fmt.Errorf("attn_norm: %w", err)
	}
	if err := d.MatVec(w.q, xn, q); err != nil {
		return fmt.Errorf("attn_q: %w", err)
	}
	if err := d.MatVec(w.k, xn, k); err != nil {
		return fmt.Errorf("attn_k: %w", err)
	}
	if err := d.MatVec(w.v, xn, v); err != nil {
		return fmt.Errorf("attn_v: %w", err)
	}
	if w.qBias.Cols > 0 {
		if err := d.AddBias(q, w.qBias); err != nil {
			return fmt.Errorf("attn_q bias: %w", err)
		}
		if err := d.AddBias(k, w.kBias); err != nil {
			return fmt.Errorf("attn_k bias: %w", err)
		}
		if err := d.AddBias(v, w.vBias); err != nil {
			return fmt.Errorf("attn_v bias: %w", err)
		}
	}
	if w.qNorm.Cols > 0 {
		qh := kernels.DevF32{Ptr: q.Ptr, Rows: B * m.Heads, Cols: m.HeadDim}
		if err := d.RMSNorm(qh, w.qNorm, qh, m.RMSEps); err != nil {
			return fmt.Errorf("attn_q_norm: %w", err)
		}
		kh := kernels.DevF32{Ptr: k.Ptr, Rows: B * m.KVHeads, Cols: m.HeadDim}
		if err := d.RMSNorm(kh, w.kNorm, kh, m.RMSEps); err != nil {
			return fmt.Errorf("attn_k_norm: %w", err)
		}
	}
	rope := kernels.RopeParams{Heads: m.Heads, HeadDim: m.HeadDim, Dim: m.RopeDim, Base: m.RopeBase, Neox: m.Arch.RopeNeox, Factors: e.w.ropeFactors}
	if err := d.RoPE(q, pos, rope); err != nil {
		return fmt.Errorf("rope q: %w", err)
	}
	rope.Heads = m.KVHeads
	if err := d.RoPE(k, pos, rope); err != nil {
		return fmt.Errorf("rope k: %w", err)
	}
	if err := d.KVStore(e.kv[l], k, v, pos, seq); err != nil {
		return fmt.Errorf("cache store: %w", err)
	}
	if err := d.Attention(e.kv[l], q, att, m.Heads, pos, seq, s.attPart); err != nil {
		return fmt.Errorf("attention: %w", err)
	}
	if err := d.MatVec(w.o, att, proj); err != nil {
		return fmt.Errorf("attn_output: %w", err)
	}
	if err := d.Add(x, proj); err != nil {
		return fmt.Errorf("attn residual: %w", err)
	}
	if err := d.RMSNorm(x, w.ffnNorm, xn, m.RMSEps); err != nil {
		return fmt.Errorf("ffn_norm: %w", err)
	}
	if err := d.MatVec(w.gate, xn, gate); err != nil {
		return fmt.Errorf("ffn_gate: %w", err)
	}
	if err := d.MatVec(w.up, xn, up); err != nil {
		return fmt.Errorf("ffn_up: %w", err)
	}
	if err := d.SwiGLU(gate, up, gate); err != nil {
		return fmt.Errorf("ffn swiglu: %w", err)
	}
	if err := d.MatVec(w.down, gate, proj); err != nil {
		return fmt.Errorf("ffn_down: %w", err)
	}
	if err := d.Add(x, proj); err != nil {
		return fmt.Errorf("ffn residual: %w", err)
	}
	return nil
}
