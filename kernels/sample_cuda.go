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
