//go:build cuda

package kernels

import (
	"fmt"
	"math"
	"strconv"

	"llmserve/internal/cuda"
)

// MaxHeadDim is the largest head size the attention kernel takes; head
// sizes must also be multiples of 4.
const MaxHeadDim = 256

// MaxGroup is the most query heads that may share one KV head.
const MaxGroup = 8

// DevKVCache is one layer's key and value cache on the device:
// [MaxSeqs][Ctx][KVHeads*HeadDim] f32 each.
type DevKVCache struct {
	K, V             cuda.DevPtr
	MaxSeqs, Ctx     int
	KVHeads, HeadDim int
}

// KVDim is the cache width per position.
func (c DevKVCache) KVDim() int { return c.KVHeads * c.HeadDim }

// Bytes is the size of the K (or V) half.
func (c DevKVCache) Bytes() int64 { return int64(c.MaxSeqs) * int64(c.Ctx) * int64(c.KVDim()) * 4 }

func (c DevKVCache) check(op string) error {
	if c.MaxSeqs < 1 || c.Ctx < 1 || c.KVHeads < 1 || c.HeadDim < 4 || c.HeadDim%4 != 0 || c.HeadDim > MaxHeadDim || c.K == 0 || c.V == 0 {
		return fmt.Errorf("kernels: %s: cache %d seqs × %d positions × %d heads of %d (head a multiple of 4, ≤ %d)",
			op, c.MaxSeqs, c.Ctx, c.KVHeads, c.HeadDim, MaxHeadDim)
	}
	return nil
}

// KVStore writes k[b, :] and v[b, :] (B × KVDim) to the cache at position
// pos[b] of sequence seq[b]; tokens with seq[b] < 0 are skipped.
func (d *Device) KVStore(c DevKVCache, k, v DevF32, pos, seq DevI32) error {
	if err := c.check("kv_store"); err != nil {
		return err
	}
	if k.Cols != c.KVDim() || v.Cols != k.Cols || v.Rows != k.Rows || pos.Len != k.Rows || seq.Len != k.Rows || k.Rows < 1 {
		return fmt.Errorf("kernels: kv_store: k %d×%d, v %d×%d, %d positions, %d seqs, cache width %d",
			k.Rows, k.Cols, v.Rows, v.Cols, pos.Len, seq.Len, c.KVDim())
	}
	return d.launch("kv_store", cuda.Dim3{X: k.Rows}, cuda.Dim3{X: 128}, 0,
		cuda.P(k.Ptr), cuda.P(v.Ptr), cuda.P(c.K), cuda.P(c.V), cuda.P(pos.Ptr), cuda.P(seq.Ptr),
		cuda.I(c.KVDim()), cuda.I(c.Ctx), cuda.I(c.MaxSeqs))
}

// attentionSplits is how many ranges the positions of one token's
// attention are split into (one block per KV head each): about 16
// positions per range up to 64 ranges, so that even one token's step has
// blocks for every SM and each block a short walk. It depends on the cache
// size only, so a captured graph stays valid as sequences grow.
func attentionSplits(c DevKVCache) int { return min(max(c.Ctx/16, 1), 64) }

// splitsFor is the split count a launch of attention over c uses, where
// each split of one token is perBlock blocks (its KV heads, or query heads):
// attentionSplits, but no more than it takes for a token's blocks to fill
// the multiprocessors about four times over. A model of 32 KV heads
// (Phi-3.5-mini) then runs 17 splits, not 64, so a step at a short depth
// launches and merges a quarter of the empty ranges; one of 8 (Llama 8B)
// keeps 64. AttentionScratch, sized by attentionSplits, holds either.
func (d *Device) splitsFor(c DevKVCache, perBlock int) int {
	return min(attentionSplits(c), max(1, ceilDiv(4*d.ctx.Multiprocessors(), perBlock)))
}

// attentionSlots is the (head, dimension) slots per thread of
// attention_part_<S> for n of them in a block of 128 threads.
func attentionSlots(n int) int {
	s := 2
	for s*128 < n {
		s *= 2
	}
	return s
}

// attentionShared is the dynamic shared memory of attention_part with
// tiles of tile positions: K rows (padded by 4 floats) and V rows of a
// tile, the group's queries and a tile of scores per query head.
func attentionShared(tile, headDim, group int) int {
	return 4 * (tile*(headDim+4) + tile*headDim + group*headDim + group*tile)
}

// attentionTile is the positions per tile of attention_part (ATT_TILE in
// attention.cu at most): 32, halved until a tile fits the 48 KiB of shared
// memory every device gives a block without opting in.
func attentionTile(headDim, group int) int {
	tile := 32
	for tile > 1 && attentionShared(tile, headDim, group) > 48*1024-256 {
		tile /= 2
	}
	return tile
}

// AttentionScratch is the number of floats of scratch Attention needs for
// rows tokens of heads heads.
func AttentionScratch(c DevKVCache, rows, heads int) int {
	return rows * heads * attentionSplits(c) * (c.HeadDim + 2)
}

// Attention writes, for each token b and head h, the softmax(q·K/√HeadDim)
// weighted sum of V over positions 0..pos[b] of sequence seq[b] to out;
// q and out are B × heads*HeadDim, and heads a multiple of c.KVHeads.
// Tokens with seq[b] < 0 get zeros. scratch holds the partial results of
// the position ranges (AttentionScratch floats at least).
func (d *Device) Attention(c DevKVCache, q, out DevF32, heads int, pos, seq DevI32, scratch DevF32) error {
	return d.attention("attention", c, q, out, heads, pos, seq, scratch, float32(1/math.Sqrt(float64(c.HeadDim))), 0, 0)
}

// attention checks the operands, then launches attention_part_<S> over c,
// a score being q·k·scale, soft-capped at cap when cap > 0, over the last
// window positions up to a token's own when window > 0 (every position
// when 0), then merges the splits; op names the caller in errors.
func (d *Device) attention(op string, c DevKVCache, q, out DevF32, heads int, pos, seq DevI32, scratch DevF32, scale, cap float32, window int) error {
	if err := c.check(op); err != nil {
		return err
	}
	if err := checkAttention(op, c.KVHeads, c.HeadDim, q, out, heads, pos, seq); err != nil {
		return err
	}
	if need := AttentionScratch(c, q.Rows, heads); scratch.Len() < need {
		return fmt.Errorf("kernels: %s: scratch of %d floats, need %d", op, scratch.Len(), need)
	}
	splits := d.splitsFor(c, c.KVHeads)
	group := heads / c.KVHeads
	tile := attentionTile(c.HeadDim, group)
	if err := d.launch("attention_part_"+strconv.Itoa(attentionSlots(group*c.HeadDim)), cuda.Dim3{X: q.Rows, Y: c.KVHeads, Z: splits}, cuda.Dim3{X: 128}, attentionShared(tile, c.HeadDim, group),
		cuda.P(q.Ptr), cuda.P(c.K), cuda.P(c.V), cuda.P(scratch.Ptr), cuda.P(pos.Ptr), cuda.P(seq.Ptr),
		cuda.I(heads), cuda.I(c.KVHeads), cuda.I(c.HeadDim), cuda.I(c.Ctx), cuda.I(c.MaxSeqs), cuda.F(scale), cuda.I(tile),
		cuda.F(cap), cuda.I(window)); err != nil {
		return err
	}
	return d.attentionMerge(scratch, out, heads, c.HeadDim, splits, pos, seq, c.Ctx, c.MaxSeqs, 0)
}

// checkAttention checks the operands of an attention (op) over a cache of
// kvHeads heads of headDim: q and out B × heads*headDim, heads a multiple
// of kvHeads (at most MaxGroup per KV head), B positions and sequences.
func checkAttention(op string, kvHeads, headDim int, q, out DevF32, heads int, pos, seq DevI32) error {
	if heads < 1 || heads%kvHeads != 0 || heads/kvHeads > MaxGroup || q.Cols != heads*headDim || out.Rows != q.Rows || out.Cols != q.Cols ||
		pos.Len != q.Rows || seq.Len != q.Rows || q.Rows < 1 {
		return fmt.Errorf("kernels: %s: q %d×%d, out %d×%d, %d heads over %d KV heads of %d (at most %d per KV head), %d positions, %d seqs",
			op, q.Rows, q.Cols, out.Rows, out.Cols, heads, kvHeads, headDim, MaxGroup, pos.Len, seq.Len)
	}
	return nil
}

// attentionMerge launches attention_merge, which merges the splits'
// partial results in scratch (attention_part's or attention_part_pf16's
// layout) into out (B × heads*headDim), zeros for tokens whose seq and pos
// fall outside maxSeqs × ctx. minPer > 0 merges only the splits
// attention_vec_pf16's _used twins wrote with that minimum
// (attention_merge_used); 0 every split.
func (d *Device) attentionMerge(scratch, out DevF32, heads, headDim, splits int, pos, seq DevI32, ctx, maxSeqs, minPer int) error {
	name, args := "attention_merge", []cuda.Arg{cuda.P(scratch.Ptr), cuda.P(out.Ptr), cuda.P(pos.Ptr), cuda.P(seq.Ptr), cuda.I(heads), cuda.I(headDim),
		cuda.I(splits), cuda.I(ctx), cuda.I(maxSeqs)}
	if minPer > 0 {
		name, args = "attention_merge_used", append(args, cuda.I(minPer))
	}
	return d.launch(name, cuda.Dim3{X: out.Rows, Y: heads}, cuda.Dim3{X: 32 * ceilDiv(headDim, 32)}, 0, args...)
}

// RopeStoreOp prepares a step's queries and keys for Attention: each head
// of Q (B × Heads*HeadDim) and K (B × KVHeads*HeadDim) is RMS-normalized by
// QNorm or KNorm (HeadDim values each, with Eps) when those are set, then
// rotated by its token's position (Rope); Q is rotated in place, and K and
// V are written to the cache at each token's position and sequence
// (tokens with seq < 0 write nothing).
type RopeStoreOp struct {
	Cache        DevKVCache
	Q, K, V      DevF32
	QNorm, KNorm DevF32
	Eps          float32
	Pos, Seq     DevI32
	Rope         RopeParams
}

// RopeStore runs op in one launch.
func (d *Device) RopeStore(op RopeStoreOp) error {
	if err := op.check(); err != nil {
		return err
	}
	c, r, B := op.Cache, op.Rope, op.Q.Rows
	return d.launch("rope_store", cuda.Dim3{X: B, Y: r.Heads + c.KVHeads}, cuda.Dim3{X: 32 * ceilDiv(r.HeadDim/2, 32)}, 0,
		cuda.P(op.Q.Ptr), cuda.P(op.K.Ptr), cuda.P(op.V.Ptr), cuda.P(c.K), cuda.P(c.V), cuda.P(op.QNorm.Ptr), cuda.P(op.KNorm.Ptr),
		cuda.P(op.Pos.Ptr), cuda.P(op.Seq.Ptr), cuda.P(r.Factors.Ptr), cuda.I(r.Heads), cuda.I(c.KVHeads), cuda.I(r.HeadDim),
		cuda.I(r.Dim), cuda.F(r.Base), cuda.I(boolInt(r.Neox)), cuda.F(op.Eps), cuda.F(r.mscale()), cuda.I(c.Ctx), cuda.I(c.MaxSeqs))
}

func (op RopeStoreOp) check() error {
	c, r := op.Cache, op.Rope
	if err := c.check("rope_store"); err != nil {
		return err
	}
	B := op.Q.Rows
	if r.Heads < 1 || r.HeadDim != c.HeadDim || r.HeadDim%2 != 0 || r.Dim < 2 || r.Dim%2 != 0 || r.Dim > r.HeadDim ||
		op.Q.Cols != r.Heads*r.HeadDim || op.K.Cols != c.KVDim() || op.V.Cols != c.KVDim() ||
		op.K.Rows != B || op.V.Rows != B || op.Pos.Len != B || op.Seq.Len != B || B < 1 {
		return fmt.Errorf("kernels: rope_store: q %d×%d, k %d×%d, v %d×%d, %d positions, %d seqs, %d heads of %d rotating %d, cache %d heads of %d",
			op.Q.Rows, op.Q.Cols, op.K.Rows, op.K.Cols, op.V.Rows, op.V.Cols, op.Pos.Len, op.Seq.Len, r.Heads, r.HeadDim, r.Dim, c.KVHeads, c.HeadDim)
	}
	for _, n := range []DevF32{op.QNorm, op.KNorm} {
		if n.Ptr != 0 && n.Len() != r.HeadDim {
			return fmt.Errorf("kernels: rope_store: head norm of %d values for heads of %d", n.Len(), r.HeadDim)
		}
	}
	if r.Factors.Ptr != 0 && r.Factors.Len() != r.Dim/2 {
		return fmt.Errorf("kernels: rope_store: %d frequency factors for %d rotated values", r.Factors.Len(), r.Dim)
	}
	return nil
}
