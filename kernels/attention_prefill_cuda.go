//go:build cuda

package kernels

import (
	"fmt"
	"strconv"

	"llmserve/internal/cuda"
)

// prefillM is PF_M in attention_prefill.cu: the query rows (pairs of a
// batch row and a query head of one KV head's group) per block.
const prefillM = 64

// prefillWalk is the positions per K/V tile of the kernel for heads of up
// to dim values (BN of its ATTENTION_PREFILL line, PF_BN_<dim>), and
// whether it keeps the queries' fragments in registers (QREG);
// TestGPUAttentionPrefillLayout compares them, and prefillShared, with
// attention_prefill_layout's.
func prefillWalk(dim int) (bn int, qreg bool) {
	switch dim {
	case 64:
		return 64, true
	case 128:
		return 32, true
	}
	return 16, false
}

// prefillKernelNames are the kernels of attention_prefill.fatbin.
// Each has an _arch twin that takes the architectures' scores
// (PrefillScores).
func prefillKernelNames() []string {
	var names []string
	for _, n := range []string{"attention_prefill_f32_64", "attention_prefill_f32_128", "attention_prefill_f32_256",
		"attention_prefill_pf16_64", "attention_prefill_pf16_128", "attention_prefill_pf16_256"} {
		names = append(names, n, n+"_arch")
	}
	return append(names, "attention_prefill_layout")
}

// prefillShared is the dynamic shared memory of the kernel for heads of up
// to dim values: two stages of a K and a V tile, and the queries' region
// where they do not sit in the second stage; rows of dim+8 f16 values.
func prefillShared(dim int) int {
	bn, qreg := prefillWalk(dim)
	rows := 4 * bn
	if !qreg {
		rows += prefillM
	}
	return rows * (dim + 8) * 2
}

// AttentionPrefillOp is the causal attention of a step's rows over the
// cache on the tensor cores, for the rows the tile table covers: Q and Out
// are B × Heads*HeadDim (Out not overlapping Q), Heads a multiple of
// Cache.KVHeads with at most MaxGroup per KV head. Tiles is the device
// copy of NumTiles PrefillTile entries (PrefillTileTable, written by the
// caller) and MaxRows the most rows of any of them (at most B). Row b of a
// tile attends to positions 0..pos(b) of its sequence, whose K and V the
// RoPE/cache-write launch has stored already; rows no tile covers are
// left as they were, and so are the rows of a tile the kernel finds out of
// range (see attention_prefill.cu). An entry of Rows 0 is skipped, so a
// captured graph may launch a fixed NumTiles and MaxRows (PrefillTileRows,
// or the batch) and each step fill the table's unused entries with zeros.
type AttentionPrefillOp struct {
	Cache    DevKVCache
	Q, Out   DevF32
	Heads    int
	Tiles    cuda.DevPtr
	NumTiles int
	MaxRows  int
	Scores   PrefillScores // the logit scale, soft-cap and window (zero: llama's)
}

func (op AttentionPrefillOp) check(maxShared int) error {
	c := op.Cache
	if err := c.check("attention_prefill"); err != nil {
		return err
	}
	if err := op.Scores.check("attention_prefill"); err != nil {
		return err
	}
	if !PrefillSupports(c.HeadDim) {
		return fmt.Errorf("kernels: attention_prefill: heads of %d values: the prefill kernels take multiples of 16 up to 256", c.HeadDim)
	}
	if need := prefillShared(prefillKernelDim(c.HeadDim)); need > maxShared {
		return fmt.Errorf("kernels: attention_prefill: heads of %d values need %d bytes of shared memory per block, the device gives %d", c.HeadDim, need, maxShared)
	}
	B := op.Q.Rows
	if op.Heads < 1 || op.Heads%c.KVHeads != 0 || op.Heads/c.KVHeads > MaxGroup || op.Q.Cols != op.Heads*c.HeadDim ||
		op.Out.Rows != B || op.Out.Cols != op.Q.Cols || B < 1 {
		return fmt.Errorf("kernels: attention_prefill: q %d×%d, out %d×%d, %d heads over %d KV heads of %d (at most %d per KV head)",
			op.Q.Rows, op.Q.Cols, op.Out.Rows, op.Out.Cols, op.Heads, c.KVHeads, c.HeadDim, MaxGroup)
	}
	if op.NumTiles < 0 || op.NumTiles > 65535 || (op.NumTiles > 0 && (op.Tiles == 0 || op.Tiles%4 != 0 || op.MaxRows < 1 || op.MaxRows > B)) {
		return fmt.Errorf("kernels: attention_prefill: %d tiles at %#x of at most %d rows for a batch of %d (want ≤ 65535 tiles, 4-byte aligned, 1 ≤ rows ≤ batch)",
			op.NumTiles, uint64(op.Tiles), op.MaxRows, B)
	}
	if op.Q.Ptr%16 != 0 || op.Out.Ptr%16 != 0 || c.K%16 != 0 || c.V%16 != 0 {
		return fmt.Errorf("kernels: attention_prefill: q at %#x, out at %#x, cache at %#x and %#x: want 16-byte aligned addresses",
			uint64(op.Q.Ptr), uint64(op.Out.Ptr), uint64(c.K), uint64(c.V))
	}
	return nil
}

// AttentionPrefill queues op: one launch of attention_prefill_f32_<D>, D
// the compiled head size that holds Cache.HeadDim (PrefillSupports says
// which sizes it takes; for the others it returns an error and the caller
// keeps Attention). Grid: ceil(MaxRows·group / 64) chunks of query rows ×
// NumTiles × KVHeads. The scores are Attention's (1/√HeadDim) or, with
// op.Scores, AttentionArch's.
func (d *Device) AttentionPrefill(op AttentionPrefillOp) error {
	if err := op.check(d.maxShared); err != nil {
		return err
	}
	if op.NumTiles == 0 {
		return nil
	}
	c := op.Cache
	dim := prefillKernelDim(c.HeadDim)
	group := op.Heads / c.KVHeads
	name, scores := op.Scores.kernel("attention_prefill_f32_"+strconv.Itoa(dim), c.HeadDim)
	return d.launch(name,
		cuda.Dim3{X: ceilDiv(op.MaxRows*group, prefillM), Y: op.NumTiles, Z: c.KVHeads}, cuda.Dim3{X: 128}, prefillShared(dim),
		append([]cuda.Arg{cuda.P(op.Q.Ptr), cuda.P(op.Out.Ptr), cuda.P(c.K), cuda.P(c.V), cuda.P(op.Tiles), cuda.I(op.Q.Rows), cuda.I(op.Heads),
			cuda.I(c.KVHeads), cuda.I(c.HeadDim), cuda.I(c.Ctx), cuda.I(c.MaxSeqs), cuda.I(op.MaxRows)}, scores...)...)
}

// kernel is the prefill kernel of s named from base (base itself for
// llama's scores, else its _arch twin) and its last arguments: scaleLog2,
// then for the twin capIn, capOut and window (kernelTerms).
func (s PrefillScores) kernel(base string, headDim int) (string, []cuda.Arg) {
	scaleLog2, capIn, capOut, window := s.kernelTerms(headDim)
	if s == (PrefillScores{}) {
		return base, []cuda.Arg{cuda.F(scaleLog2)}
	}
	return base + "_arch", []cuda.Arg{cuda.F(scaleLog2), cuda.F(capIn), cuda.F(capOut), cuda.I(window)}
}
