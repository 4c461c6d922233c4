package kernels

import (
	"fmt"
	"math"
)

// The host side of the prompt attention on the tensor cores
// (attention_prefill.cu, Device.AttentionPrefill): the tile table that
// describes a step's batch, and the head sizes the kernels take. Untagged,
// so that the engine can plan a step and its tests run without CUDA.

// PrefillTileRows is the tile the prefill kernels want: at most this many
// batch rows per PrefillTile (PrefillTiles' tile argument).
const PrefillTileRows = 64

// PrefillTile is a run of Rows consecutive batch rows of Q, from Row0,
// that belong to sequence Seq at positions Pos0, Pos0+1, ... . Its device
// form (AttentionPrefillOp.Tiles) is the four int32 values in this order.
type PrefillTile struct{ Row0, Rows, Seq, Pos0 int32 }

// PrefillTiles splits a batch whose row b is position pos[b] of sequence
// seq[b] into runs of at most tile rows (tile < 1 counts as 1): a run
// grows while the next row has the same sequence and the next position.
// Rows with seq < 0 or pos < 0 (padding) are skipped and end a run; rows
// past the shorter of seq and pos are ignored.
func PrefillTiles(seq, pos []int32, tile int) []PrefillTile {
	tile = max(tile, 1)
	n := min(len(seq), len(pos))
	var out []PrefillTile
	for b := 0; b < n; b++ {
		if seq[b] < 0 || pos[b] < 0 {
			continue
		}
		if k := len(out) - 1; k >= 0 {
			r := &out[k]
			if int(r.Row0+r.Rows) == b && r.Seq == seq[b] && r.Pos0+r.Rows == pos[b] && int(r.Rows) < tile {
				r.Rows++
				continue
			}
		}
		out = append(out, PrefillTile{Row0: int32(b), Rows: 1, Seq: seq[b], Pos0: pos[b]})
	}
	return out
}

// PrefillSupports says whether the prefill kernels take heads of headDim
// values: a multiple of 16 up to 256 (64 and 128 are the fast sizes;
// others run in the next compiled size with zero padding). Where it is
// false the engine keeps Device.Attention.
func PrefillSupports(headDim int) bool {
	return headDim >= 16 && headDim <= 256 && headDim%16 == 0
}

// prefillKernelDim is the head size of the compiled kernel that runs heads
// of headDim values (PrefillSupports): 64, 128 or 256.
func prefillKernelDim(headDim int) int {
	switch {
	case headDim <= 64:
		return 64
	case headDim <= 128:
		return 128
	}
	return 256
}

// PrefillTileTable is tiles in their device form (four int32 values each,
// in field order) for AttentionPrefillOp.Tiles, and the most rows of any
// tile (AttentionPrefillOp.MaxRows).
func PrefillTileTable(tiles []PrefillTile) (words []int32, maxRows int) {
	words = make([]int32, 0, 4*len(tiles))
	for _, t := range tiles {
		words = append(words, t.Row0, t.Rows, t.Seq, t.Pos0)
		maxRows = max(maxRows, int(t.Rows))
	}
	return words, maxRows
}

// PrefillScores are the architectures' terms of a prompt attention's
// scores (gemma2, phi3): the logit scale (0: 1/√headDim), a soft-cap of
// the scaled logits to Cap·tanh(logit/Cap) when Cap > 0, and a window of
// the last Window positions up to a row's own when Window > 0. The zero
// value is llama's attention.
type PrefillScores struct {
	Scale  float32
	Cap    float32
	Window int
}

func (s PrefillScores) check(op string) error {
	if !(s.Scale >= 0) || math.IsInf(float64(s.Scale), 0) || !(s.Cap >= 0) || math.IsInf(float64(s.Cap), 0) || s.Window < 0 {
		return fmt.Errorf("kernels: %s: scale %g, cap %g, window %d (want finite, non-negative)", op, s.Scale, s.Cap, s.Window)
	}
	return nil
}

// kernelTerms are the kernel's scaleLog2, capIn, capOut and window for
// heads of headDim values: without a cap the scale in units of exp2;
// with one, capIn = scale/cap and capOut = cap·log2 e (the capped logit
// already in units of exp2) and scaleLog2 = 1.
func (s PrefillScores) kernelTerms(headDim int) (scaleLog2, capIn, capOut float32, window int) {
	if s.Scale == 0 && s.Cap == 0 {
		return float32(math.Log2E / math.Sqrt(float64(headDim))), 0, 0, s.Window // llama's, as it always was
	}
	scale := float64(s.Scale)
	if scale == 0 {
		scale = 1 / math.Sqrt(float64(headDim))
	}
	if s.Cap > 0 {
		return 1, float32(scale / float64(s.Cap)), float32(float64(s.Cap) * math.Log2E), s.Window
	}
	return float32(scale * math.Log2E), 0, 0, s.Window
}
