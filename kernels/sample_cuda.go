//go:build cuda

package kernels

import (
	"fmt"
	"math"

	"llmserve/internal/cuda"
)

// PickMode says whether and how Sample picks a row's token.
type PickMode int32

const (
	PickNone   PickMode = iota // leave the row to the host
	PickGreedy                 // the smallest index of the largest logit
	PickRandom                 // top-k, top-p, min-p, temperature, then a draw with U
)

// Pick is how Sample picks one row's token; it mirrors struct Pick in
// sample.cu.
type Pick struct {
	Mode        PickMode
	Temperature float32
	TopK        int     // ≤ 0 or ≥ the vocabulary: off; above SampleCap: the row is left to the host
	TopP, MinP  float32 // top-p (off outside (0, 1)), min-p (off ≤ 0)
	U           float32 // the uniform draw in [0, 1)
}

// PickWords is the size of an encoded Pick in 4-byte words.
const PickWords = 6

// SampleCap is the most candidates Sample sorts for top-k and top-p.
const SampleCap = 1024

// Encode writes p in sample.cu's layout to dst[:PickWords].
func (p Pick) Encode(dst []uint32) {
	dst[0] = math.Float32bits(p.Temperature)
	dst[1] = uint32(int32(p.TopK))
	dst[2] = math.Float32bits(p.TopP)
	dst[3] = math.Float32bits(p.MinP)
	dst[4] = math.Float32bits(p.U)
	dst[5] = uint32(p.Mode)
}

// Sample picks the token of each row of logits with the encoded Pick of
// that row in picks (logits.Rows × PickWords words) and writes it to out:
// rows of mode PickNone are left alone, and rows the device cannot pick
// (more than SampleCap candidates) get -1.
func (d *Device) Sample(logits DevF32, picks cuda.DevPtr, out DevI32) error {
	if logits.Rows < 1 || logits.Cols < 1 || out.Len != logits.Rows || picks == 0 {
		return fmt.Errorf("kernels: sample: logits %d×%d, %d outputs", logits.Rows, logits.Cols, out.Len)
	}
	return d.launch("sample", cuda.Dim3{X: logits.Rows}, cuda.Dim3{X: 1024}, 0,
		cuda.P(logits.Ptr), cuda.I(logits.Cols), cuda.P(picks), cuda.P(out.Ptr))
}

// PickModeWord is the word of an encoded Pick that holds its mode.
const PickModeWord = 5

// SampleMasks are the device buffers of the masked picks of SampleMasked,
// one row per row of logits.
type SampleMasks struct {
	Flags DevI32      // [rows] nonzero where the row's mask applies
	Masks cuda.DevPtr // [rows][Words] uint64, 8-byte aligned: bit i%64 of word i/64 set where token i is allowed
	Words int         // words per mask, at least (Cols+63)/64
	Picks cuda.DevPtr // [rows][PickWords] scratch: the picks with the masks' verdicts, which sample reads
}

// SampleMasked is Sample with the rows whose flag is set picked among the
// tokens their mask allows (sample_mask.cu). The logits of those rows
// are changed in place: -Inf where the mask bans a token or the logit is
// NaN, the largest float for +Inf, as the host's constrained pick reads
// them. A masked row with no finite logit left gets -1 (so does a row
// Sample cannot pick); rows of mode PickNone are left alone.
func (d *Device) SampleMasked(logits DevF32, picks cuda.DevPtr, m SampleMasks, out DevI32) error {
	switch {
	case logits.Rows < 1 || logits.Cols < 1 || out.Len != logits.Rows || picks == 0:
		return fmt.Errorf("kernels: sample_mask: logits %d×%d, %d outputs", logits.Rows, logits.Cols, out.Len)
	case m.Flags.Len < logits.Rows || m.Flags.Ptr == 0 || m.Picks == 0 || m.Masks == 0:
		return fmt.Errorf("kernels: sample_mask: %d flags for %d rows, or a buffer missing", m.Flags.Len, logits.Rows)
	case m.Words < (logits.Cols+63)/64 || m.Masks%8 != 0:
		return fmt.Errorf("kernels: sample_mask: masks of %d words at %#x for %d logits (want %d, 8-byte aligned)", m.Words, uint64(m.Masks), logits.Cols, (logits.Cols+63)/64)
	}
	if err := d.launch("sample_mask", cuda.Dim3{X: logits.Rows}, cuda.Dim3{X: 1024}, 0,
		cuda.P(logits.Ptr), cuda.I(logits.Cols), cuda.P(picks), cuda.P(m.Flags.Ptr), cuda.P(m.Masks), cuda.I(m.Words), cuda.P(m.Picks), cuda.P(out.Ptr)); err != nil {
		return err
	}
	return d.Sample(logits, m.Picks, out)
}
