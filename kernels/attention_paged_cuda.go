//go:build cuda

package kernels

import (
	"fmt"
	"math"
	"strconv"

	"llmserve/internal/cuda"
)

// DevKVPool is one layer's paged KV pool on the device (kv.cuh): K and V
// each [Blocks][BlockSize][KVHeads*HeadDim] f16, and the block table
// Tables, [MaxSeqs][TableCols] int32 block ids, row s for sequence slot s
// (shared by every layer; the engine uploads it with a step's inputs).
type DevKVPool struct {
	KVPoolLayout
	K, V   cuda.DevPtr
	Tables cuda.DevPtr
}

// pagedKernelNames are the kernels of attention_paged.fatbin.
func pagedKernelNames() []string {
	names := []string{"kv_store_pf16", "rope_store_pf16", "attention_part_pf16_2", "attention_part_pf16_4",
		"attention_part_pf16_8", "attention_part_pf16_16", "kv_pool_cells"}
	for _, v := range attentionVecInstances {
		names = append(names, v.name(), v.name()+"_used", v.name()+"_arch", v.name()+"_arch_used")
	}
	return names
}

func (p DevKVPool) check(op string) error {
	if err := p.KVPoolLayout.check(op); err != nil {
		return err
	}
	if p.K == 0 || p.V == 0 || p.Tables == 0 || p.K%16 != 0 || p.V%16 != 0 || p.Tables%4 != 0 {
		return fmt.Errorf("kernels: %s: pool at %#x and %#x, table at %#x (want 16-byte aligned pools, a 4-byte aligned table)",
			op, uint64(p.K), uint64(p.V), uint64(p.Tables))
	}
	return nil
}

// poolArgs are kv_pool's parameters: tables, tableCols, blockSize, blocks, maxSeqs.
func (p DevKVPool) poolArgs() []cuda.Arg {
	return []cuda.Arg{cuda.P(p.Tables), cuda.I(p.TableCols), cuda.I(p.BlockSize), cuda.I(p.Blocks), cuda.I(p.MaxSeqs)}
}

// KVStorePaged writes k[b, :] and v[b, :] (B × KVDim), rounded to f16, to
// the cell of position pos[b] of slot seq[b]; tokens whose cell is
// outside the pool (seq < 0: padding) are skipped.
func (d *Device) KVStorePaged(p DevKVPool, k, v DevF32, pos, seq DevI32) error {
	if err := p.check("kv_store_pf16"); err != nil {
		return err
	}
	if k.Cols != p.KVDim() || v.Cols != k.Cols || v.Rows != k.Rows || pos.Len != k.Rows || seq.Len != k.Rows || k.Rows < 1 {
		return fmt.Errorf("kernels: kv_store_pf16: k %d×%d, v %d×%d, %d positions, %d seqs, pool width %d",
			k.Rows, k.Cols, v.Rows, v.Cols, pos.Len, seq.Len, p.KVDim())
	}
	args := append([]cuda.Arg{cuda.P(k.Ptr), cuda.P(v.Ptr), cuda.P(p.K), cuda.P(p.V), cuda.P(pos.Ptr), cuda.P(seq.Ptr),
		cuda.I(p.KVDim())}, p.poolArgs()...)
	return d.launch("kv_store_pf16", cuda.Dim3{X: k.Rows}, cuda.Dim3{X: 128}, 0, args...)
}

// RopeStorePagedOp is RopeStoreOp over a paged f16 pool: the queries are
// rotated in place, the keys rotated and written with the values to each
// token's cell.
type RopeStorePagedOp struct {
	Pool         DevKVPool
	Q, K, V      DevF32
	QNorm, KNorm DevF32
	Eps          float32
	Pos, Seq     DevI32
	Rope         RopeParams
}

// RopeStorePaged runs op in one launch.
func (d *Device) RopeStorePaged(op RopeStorePagedOp) error {
	p, r := op.Pool, op.Rope
	if err := p.check("rope_store_pf16"); err != nil {
		return err
	}
	// The shapes are RopeStoreOp's; its check takes a cache of the same heads.
	flat := RopeStoreOp{Cache: DevKVCache{K: p.K, V: p.V, MaxSeqs: p.MaxSeqs, Ctx: p.Ctx(), KVHeads: p.KVHeads, HeadDim: p.HeadDim},
		Q: op.Q, K: op.K, V: op.V, QNorm: op.QNorm, KNorm: op.KNorm, Eps: op.Eps, Pos: op.Pos, Seq: op.Seq, Rope: r}
	if err := flat.check(); err != nil {
		return fmt.Errorf("kernels: rope_store_pf16: %w", err)
	}
	args := append([]cuda.Arg{cuda.P(op.Q.Ptr), cuda.P(op.K.Ptr), cuda.P(op.V.Ptr), cuda.P(p.K), cuda.P(p.V),
		cuda.P(op.QNorm.Ptr), cuda.P(op.KNorm.Ptr), cuda.P(op.Pos.Ptr), cuda.P(op.Seq.Ptr), cuda.P(r.Factors.Ptr),
		cuda.I(r.Heads), cuda.I(p.KVHeads), cuda.I(r.HeadDim), cuda.I(r.Dim), cuda.F(r.Base), cuda.I(boolInt(r.Neox)),
		cuda.F(op.Eps), cuda.F(r.mscale())}, p.poolArgs()...)
	return d.launch("rope_store_pf16", cuda.Dim3{X: op.Q.Rows, Y: r.Heads + p.KVHeads}, cuda.Dim3{X: 32 * ceilDiv(r.HeadDim/2, 32)}, 0, args...)
}

// AttentionPaged is Attention over a paged f16 pool: for each token b and
// head h, the softmax(q·K/√HeadDim) weighted sum of V over positions
// 0..pos[b] of slot seq[b], f32 throughout but for the cache's values; q
// and out are B × heads*HeadDim. Tokens whose cell is outside the pool
// (padding) get zeros. scratch holds AttentionPagedScratch floats at
// least. The splits are merged by attention.cu's attention_merge.
func (d *Device) AttentionPaged(p DevKVPool, q, out DevF32, heads int, pos, seq DevI32, scratch DevF32) error {
	return d.attentionPaged("attention_pf16", AttentionPagedOp{Pool: p, Q: q, Out: out, Heads: heads, Pos: pos, Seq: seq, Scratch: scratch,
		Scale: float32(1 / math.Sqrt(float64(p.HeadDim)))})
}

// AttentionPagedOp is AttentionArchOp over a paged f16 pool: the logit
// scale Scale, logits soft-capped to Cap·tanh(logit/Cap) when Cap > 0, and
// each token seeing only the last Window positions up to its own when
// Window > 0.
type AttentionPagedOp struct {
	Pool     DevKVPool
	Q, Out   DevF32 // B × Heads*HeadDim
	Heads    int
	Pos, Seq DevI32
	Scratch  DevF32 // AttentionPagedScratch(Pool.KVPoolLayout, B, Heads) floats at least
	Scale    float32
	Cap      float32
	Window   int
}

// AttentionPagedArch runs op: attention_vec_pf16 (its _arch twin where
// there is a soft-cap or a window) per (token, KV head, split) where an
// instance fits the group and head, else attention_part_pf16, with op's
// scale, soft-cap and window, then attention_merge.
func (d *Device) AttentionPagedArch(op AttentionPagedOp) error {
	if op.Window < 0 || op.Cap < 0 || !(op.Scale > 0) || math.IsInf(float64(op.Scale), 0) || math.IsNaN(float64(op.Cap)) {
		return fmt.Errorf("kernels: attention_arch_pf16: window %d, cap %g, scale %g", op.Window, op.Cap, op.Scale)
	}
	return d.attentionPaged("attention_arch_pf16", op)
}

// attentionPaged checks op's operands and launches it; name is the caller
// in errors.
func (d *Device) attentionPaged(name string, op AttentionPagedOp) error {
	p, q := op.Pool, op.Q
	if err := p.check(name); err != nil {
		return err
	}
	if err := checkAttention(name, p.KVHeads, p.HeadDim, q, op.Out, op.Heads, op.Pos, op.Seq); err != nil {
		return err
	}
	if need := AttentionPagedScratch(p.KVPoolLayout, q.Rows, op.Heads); op.Scratch.Len() < need {
		return fmt.Errorf("kernels: %s: scratch of %d floats, need %d", name, op.Scratch.Len(), need)
	}
	splits := pagedSplits(p.KVPoolLayout)
	group := op.Heads / p.KVHeads
	// attention_vec_pf16 where an instance fits (its _arch twin where the
	// scores are capped or windowed, with the preview (SetPreview) its
	// _arch_used twin; else its _used twin, unless
	// LLMSERVE_ATTENTION_VEC_MIN=0), else
	// attention_part_pf16 (which takes a tile, a soft-cap and a window).
	args := []cuda.Arg{cuda.P(q.Ptr), cuda.P(p.K), cuda.P(p.V), cuda.P(op.Scratch.Ptr), cuda.P(op.Pos.Ptr), cuda.P(op.Seq.Ptr),
		cuda.I(op.Heads), cuda.I(p.KVHeads), cuda.I(p.HeadDim), cuda.F(op.Scale)}
	var kernel string
	var shared, minPer int // minPer > 0: the _used twin and attention_merge_used
	if v, ok := attentionVecFor(group, p.HeadDim); ok && d.attVec {
		kernel, shared = v.name(), v.shared(p.HeadDim)
		arch := op.Cap != 0 || op.Window != 0
		if arch {
			kernel, args = kernel+"_arch", append(args, cuda.F(op.Cap), cuda.I(op.Window))
		}
		if d.attVecMin > 0 && (!arch || d.preview) {
			minPer = d.attVecMin
			kernel, args = kernel+"_used", append(args, cuda.I(minPer))
		}
	} else {
		tile := attentionPagedTile(p.HeadDim, group)
		kernel, shared = "attention_part_pf16_"+strconv.Itoa(attentionSlots(group*p.HeadDim)), attentionPagedShared(tile, p.HeadDim, group)
		args = append(args, cuda.I(tile), cuda.F(op.Cap), cuda.I(op.Window))
	}
	if err := d.launch(kernel, cuda.Dim3{X: q.Rows, Y: p.KVHeads, Z: splits}, cuda.Dim3{X: 128}, shared, append(args, p.poolArgs()...)...); err != nil {
		return err
	}
	return d.attentionMerge(op.Scratch, op.Out, op.Heads, p.HeadDim, splits, op.Pos, op.Seq, p.Ctx(), p.MaxSeqs, minPer)
}

// KVPoolCells writes, for each query i, the device's kv_cell of slot
// seq[i] and position pos[i] (-1 outside the pool) to out[i] (int64
// values, as many as the queries): the device side of the layout test.
func (d *Device) KVPoolCells(p DevKVPool, seq, pos DevI32, out cuda.DevPtr) error {
	if p.Tables == 0 || p.TableCols < 1 || p.BlockSize < 1 || seq.Len != pos.Len || seq.Len < 1 || out == 0 || out%8 != 0 {
		return fmt.Errorf("kernels: kv_pool_cells: table at %#x of %d columns, blocks of %d, %d slots and %d positions, out at %#x",
			uint64(p.Tables), p.TableCols, p.BlockSize, seq.Len, pos.Len, uint64(out))
	}
	args := append([]cuda.Arg{cuda.P(seq.Ptr), cuda.P(pos.Ptr), cuda.P(out), cuda.I(seq.Len)}, p.poolArgs()...)
	return d.launch("kv_pool_cells", cuda.Dim3{X: ceilDiv(seq.Len, 128)}, cuda.Dim3{X: 128}, 0, args...)
}
