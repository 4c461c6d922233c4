package model

import "math"

// block builds one block's steps with the helpers every architecture
// shares, as llama.cpp's build_norm, build_attn and build_ffn do.
type block struct {
	c     *Config
	steps []Step
}

func (b *block) add(s Step) { b.steps = append(b.steps, s) }

// norm appends an RMSNorm by w from in to out.
func (b *block) norm(name string, w TensorID, in, out Buf) {
	b.add(Step{Op: OpNorm, Name: name, W: w, In: in, Out: out})
}

// matmul appends out = w·in (+ bias).
func (b *block) matmul(name string, w, bias TensorID, in, out Buf) {
	b.add(Step{Op: OpMatMul, Name: name, W: w, Bias: bias, In: in, Out: out})
}

// residual appends BufX += in.
func (b *block) residual(name string, in Buf) {
	b.add(Step{Op: OpAdd, Name: name, In: in, Out: BufX})
}

// qkv appends separate Q, K and V products of BufCur, with biases when
// bias is set.
func (b *block) qkv(bias bool) {
	bq, bk, bv := NoTensor, NoTensor, NoTensor
	if bias {
		bq, bk, bv = AttnQBias, AttnKBias, AttnVBias
	}
	b.matmul("Qcur", AttnQ, bq, BufCur, BufQ)
	b.matmul("Kcur", AttnK, bk, BufCur, BufK)
	b.matmul("Vcur", AttnV, bv, BufCur, BufV)
}

// fusedQKV appends one product by attn_qkv and its split into Q, K and V.
func (b *block) fusedQKV() {
	q, kv := b.c.BufWidth(BufQ), b.c.BufWidth(BufK)
	b.matmul("wqkv", AttnQKV, NoTensor, BufCur, BufQKV)
	b.add(Step{Op: OpSplit, Name: "Qcur", In: BufQKV, Out: BufQ})
	b.add(Step{Op: OpSplit, Name: "Kcur", In: BufQKV, Out: BufK, Offset: q})
	b.add(Step{Op: OpSplit, Name: "Vcur", In: BufQKV, Out: BufV, Offset: q + kv})
}

// rope appends the rotation of Q and K.
func (b *block) rope(neox bool) {
	b.add(Step{Op: OpRope, Name: "Qcur_rope", In: BufQ, Out: BufQ, Neox: neox})
	b.add(Step{Op: OpRope, Name: "Kcur_rope", In: BufK, Out: BufK, Neox: neox})
}

// attention appends the attention over the cache with the logit scale
// (0: 1/√HeadDim), soft-capping and window given, and the output
// projection into BufCur.
func (b *block) attention(scale, cap float32, window int) {
	if scale == 0 {
		scale = float32(1 / math.Sqrt(float64(b.c.HeadDim)))
	}
	b.add(Step{Op: OpAttention, Name: "kqv_out", In: BufQ, Out: BufAtt, Scale: scale, Cap: cap, Window: window})
	b.matmul("attn_out", AttnOut, NoTensor, BufAtt, BufCur)
}

// ffn appends a gated feed-forward of BufCur into BufCur.
func (b *block) ffn(act Act) {
	b.matmul("ffn_gate", FFNGate, NoTensor, BufCur, BufGate)
	b.matmul("ffn_up", FFNUp, NoTensor, BufCur, BufUp)
	b.add(Step{Op: OpGLU, Name: actName(act), In: BufGate, In2: BufUp, Out: BufGate, Act: act})
	b.matmul("ffn_out", FFNDown, NoTensor, BufGate, BufCur)
}

// fusedFFN is ffn with gate and up in one ffn_up matrix.
func (b *block) fusedFFN(act Act) {
	b.matmul("ffn_up", FFNGateUp, NoTensor, BufCur, BufGateUp)
	b.add(Step{Op: OpGLU, Name: actName(act), In: BufGateUp, Out: BufGate, Act: act})
	b.matmul("ffn_out", FFNDown, NoTensor, BufGate, BufCur)
}

// moe appends a mixture of experts on BufCur: softmax over the router's
// logits, the top Used experts, their weights renormalized to sum 1.
func (b *block) moe(act Act) {
	b.add(Step{Op: OpMoE, Name: "ffn_moe_out", In: BufCur, Out: BufCur, W: FFNRouter, Act: act,
		Experts: [3]TensorID{FFNGateExps, FFNUpExps, FFNDownExps}, Used: b.c.ExpertsUsed})
}

func actName(a Act) string {
	if a == ActGELUTanh {
		return "ffn_geglu"
	}
	return "ffn_swiglu"
}

// output is the usual end of a pass: output_norm and the output product.
func output(c *Config) []Step {
	return []Step{
		{Op: OpNorm, Name: "result_norm", W: OutputNorm, In: BufRows, Out: BufRows},
		{Op: OpMatMul, Name: "result_output", W: Output, In: BufRows, Out: BufLogits},
	}
}
