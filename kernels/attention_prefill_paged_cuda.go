//go:build cuda

package kernels

import (
	"fmt"
	"strconv"

	"llmserve/internal/cuda"
)

// AttentionPrefillPagedOp is AttentionPrefillOp over a paged f16 pool: the
// tile table's sequences are the pool's table rows, a tile's positions
// must lie within the longest context a row reaches (Pool.Ctx()), and
// the cells come from the block table (kv.cuh).
type AttentionPrefillPagedOp struct {
	Pool     DevKVPool
	Q, Out   DevF32
	Heads    int
	Tiles    cuda.DevPtr
	NumTiles int
	MaxRows  int
	Scores   PrefillScores // the logit scale, soft-cap and window (zero: llama's)
}

// AttentionPrefillPaged queues op: one launch of
// attention_prefill_pf16_<D>, as AttentionPrefill does for the f32 cache.
func (d *Device) AttentionPrefillPaged(op AttentionPrefillPagedOp) error {
	p := op.Pool
	if err := p.check("attention_prefill_pf16"); err != nil {
		return err
	}
	// Shapes, tiles and alignment are AttentionPrefillOp's: its check takes
	// a cache of the pool's heads and context.
	flat := AttentionPrefillOp{Cache: DevKVCache{K: p.K, V: p.V, MaxSeqs: p.MaxSeqs, Ctx: p.Ctx(), KVHeads: p.KVHeads, HeadDim: p.HeadDim},
		Q: op.Q, Out: op.Out, Heads: op.Heads, Tiles: op.Tiles, NumTiles: op.NumTiles, MaxRows: op.MaxRows, Scores: op.Scores}
	if err := flat.check(d.maxShared); err != nil {
		return fmt.Errorf("kernels: attention_prefill_pf16: %w", err)
	}
	if op.NumTiles == 0 {
		return nil
	}
	dim := prefillKernelDim(p.HeadDim)
	group := op.Heads / p.KVHeads
	args := append([]cuda.Arg{cuda.P(op.Q.Ptr), cuda.P(op.Out.Ptr), cuda.P(p.K), cuda.P(p.V), cuda.P(op.Tiles), cuda.I(op.Q.Rows),
		cuda.I(op.Heads), cuda.I(p.KVHeads), cuda.I(p.HeadDim)}, p.poolArgs()...)
	name, scores := op.Scores.kernel("attention_prefill_pf16_"+strconv.Itoa(dim), p.HeadDim)
	args = append(append(args, cuda.I(op.MaxRows)), scores...)
	return d.launch(name,
		cuda.Dim3{X: ceilDiv(op.MaxRows*group, prefillM), Y: op.NumTiles, Z: p.KVHeads}, cuda.Dim3{X: 128}, prefillShared(dim), args...)
}
