package model

import (
	"errors"
	"fmt"
)

// Tensor parallelism (Megatron style) over N ranks, described once for
// every engine:
//
//   - Q, K and V (and their biases, and the rows of a fused attn_qkv) are
//     split by output rows, whole heads per rank: rank r holds query heads
//     [r·H/N, (r+1)·H/N). KV heads are split the same way when
//     KVHeads % N == 0; when N % KVHeads == 0 instead (more ranks than KV
//     heads) each rank holds the one KV head its query heads read, so each
//     KV head is replicated on N/KVHeads ranks. Other head counts do not
//     split. Attention and the KV cache run per rank for its heads.
//   - gate and up (and the two halves of a fused ffn_up) are split by
//     output rows: rank r holds FFN columns [r·F/N, (r+1)·F/N).
//   - attn_output and ffn_down are split by input columns, the same
//     spans: each rank's product is a partial sum of the whole product, and
//     an all-reduce (sum) of its output follows each of them, before the
//     residual add (Reduces). A column split must fall on whole quant
//     blocks (32 or 256 values of the tensor's type).
//   - token_embd and the output projection are split by vocabulary rows:
//     rank r holds tokens [r·V/N, (r+1)·V/N). The embedding lookup writes
//     the token's row on the rank that holds it and zeros elsewhere, then
//     an all-reduce sums them; each rank computes the logits of its own
//     vocabulary span, and the pick runs across ranks: each rank's best
//     (logit, global id) candidates are merged into one global pick, the
//     lowest id winning ties, as the single engine's argmax does.
//   - norms and rope factors are replicated.
//
// Expert mixtures are not split.

// Axis is how a tensor is divided over the ranks.
type Axis uint8

const (
	Replicated Axis = iota // every rank holds all of it
	ByRows                 // rank r holds some of its rows (output features; elements of a vector)
	ByCols                 // rank r holds some of its columns (input features): its product is a partial sum
)

var axisNames = [...]string{"replicated", "rows", "columns"}

func (a Axis) String() string {
	if int(a) < len(axisNames) {
		return axisNames[a]
	}
	return "axis?"
}

// Span is the half-open range [Lo, Hi) of rows or columns.
type Span struct{ Lo, Hi int }

// Len is the number of rows or columns in s.
func (s Span) Len() int { return s.Hi - s.Lo }

// TensorSplit is the part of one tensor one rank holds: along Axis, the
// Spans in order, concatenated (several for a fused tensor).
type TensorSplit struct {
	Axis  Axis
	Spans []Span
}

// ErrNoSplit is wrapped by the errors of shapes that do not split.
var ErrNoSplit = errors.New("does not split over the ranks")

// TPPlan is the split of one model's tensors over Ranks ranks.
type TPPlan struct {
	Ranks   int
	Config  Config // the whole model's hyperparameters
	KVSplit bool   // KV heads split over the ranks; false: each KV head replicated on Ranks/KVHeads ranks
}

// PlanTP checks that a model of c splits over ranks ranks and returns the
// plan. One rank is the whole model.
func PlanTP(c *Config, ranks int) (*TPPlan, error) {
	switch {
	case ranks < 1:
		return nil, fmt.Errorf("model: tensor parallelism over %d ranks: want at least 1", ranks)
	case c.Experts > 0:
		return nil, fmt.Errorf("model: tensor parallelism: a mixture of %d experts: %w", c.Experts, ErrUnsupported)
	case c.Heads%ranks != 0:
		return nil, fmt.Errorf("model: %d query heads over %d ranks: %w (heads %% ranks = %d)", c.Heads, ranks, ErrNoSplit, c.Heads%ranks)
	case c.KVHeads%ranks != 0 && ranks%c.KVHeads != 0:
		return nil, fmt.Errorf("model: %d KV heads over %d ranks: %w (neither divides the other)", c.KVHeads, ranks, ErrNoSplit)
	case c.FFN%ranks != 0:
		return nil, fmt.Errorf("model: feed-forward width %d over %d ranks: %w (FFN %% ranks = %d)", c.FFN, ranks, ErrNoSplit, c.FFN%ranks)
	case c.Vocab > 0 && c.Vocab < ranks:
		return nil, fmt.Errorf("model: vocabulary of %d tokens over %d ranks: %w", c.Vocab, ranks, ErrNoSplit)
	}
	p := &TPPlan{Ranks: ranks, Config: *c, KVSplit: c.KVHeads%ranks == 0}
	if c.Arch != nil && c.Arch.Build != nil {
		rc := p.RankConfig(0)
		for _, b := range c.Arch.Build(&rc).Blocks {
			for _, s := range b {
				if s.Op == OpMatMul && s.Bias != NoTensor && p.Split(s.W, 0).Axis == ByCols {
					return nil, fmt.Errorf("model: step %s: a bias on a column-split product: %w", s.Name, ErrUnsupported)
				}
			}
		}
	}
	return p, nil
}

// even is the r-th of n near-equal spans of [0, total).
func even(total, n, r int) Span {
	return Span{Lo: r * total / n, Hi: (r + 1) * total / n}
}

// HeadSpan is the query heads rank r holds.
func (p *TPPlan) HeadSpan(r int) Span { return even(p.Config.Heads, p.Ranks, r) }

// KVHeadSpan is the KV heads rank r holds.
func (p *TPPlan) KVHeadSpan(r int) Span {
	c := &p.Config
	if p.KVSplit {
		return even(c.KVHeads, p.Ranks, r)
	}
	kv := p.HeadSpan(r).Lo / (c.Heads / c.KVHeads)
	return Span{Lo: kv, Hi: kv + 1}
}

// FFNSpan is the feed-forward columns rank r holds.
func (p *TPPlan) FFNSpan(r int) Span { return even(p.Config.FFN, p.Ranks, r) }

// VocabSpan is the tokens rank r holds rows of in token_embd and output.
func (p *TPPlan) VocabSpan(r int) Span { return even(p.Config.Vocab, p.Ranks, r) }

// RankConfig is the hyperparameters of rank r's shard: its heads, KV
// heads, feed-forward width and vocabulary span; the rest is the model's.
func (p *TPPlan) RankConfig(r int) Config {
	c := p.Config
	c.Heads = p.HeadSpan(r).Len()
	c.KVHeads = p.KVHeadSpan(r).Len()
	c.FFN = p.FFNSpan(r).Len()
	c.Vocab = p.VocabSpan(r).Len()
	return c
}

// scaled is s in units of n values.
func scaled(s Span, n int) Span { return Span{Lo: s.Lo * n, Hi: s.Hi * n} }

// shifted is s moved by off.
func shifted(s Span, off int) Span { return Span{Lo: s.Lo + off, Hi: s.Hi + off} }

// Split is the part of tensor id rank r holds.
func (p *TPPlan) Split(id TensorID, r int) TensorSplit {
	c := &p.Config
	q := scaled(p.HeadSpan(r), c.HeadDim)
	kv := scaled(p.KVHeadSpan(r), c.HeadDim)
	ffn := p.FFNSpan(r)
	rows := func(s ...Span) TensorSplit { return TensorSplit{Axis: ByRows, Spans: s} }
	switch id {
	case TokEmbd, Output:
		return rows(p.VocabSpan(r))
	case AttnQ, AttnQBias:
		return rows(q)
	case AttnK, AttnV, AttnKBias, AttnVBias:
		return rows(kv)
	case AttnQKV:
		qw, kvw := c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
		return rows(q, shifted(kv, qw), shifted(kv, qw+kvw))
	case FFNGate, FFNUp:
		return rows(ffn)
	case FFNGateUp:
		return rows(ffn, shifted(ffn, c.FFN))
	case AttnOut:
		return TensorSplit{Axis: ByCols, Spans: []Span{q}}
	case FFNDown:
		return TensorSplit{Axis: ByCols, Spans: []Span{ffn}}
	}
	return TensorSplit{Axis: Replicated}
}

// Reduces reports whether the output of st is a partial sum on each rank
// that an all-reduce (sum over the ranks, in rank order) must complete
// before the next step: the products by column-split matrices
// (attn_output and ffn_down).
func (p *TPPlan) Reduces(st *Step) bool {
	return p.Ranks > 1 && st.Op == OpMatMul && p.Split(st.W, 0).Axis == ByCols
}
