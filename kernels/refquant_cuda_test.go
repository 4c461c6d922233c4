//go:build cuda

package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"

	"llmserve/gguf"
)

// This file holds a generator of random weight blocks with sane scales, and
// the reference dequantization (gguf.Dequantize) of a row.

// refDequantRow dequantizes one row of cols values stored as t with the
// CPU reference, gguf.Dequantize.
func refDequantRow(t gguf.Type, row []byte, cols int) []float64 {
	out := make([]float32, cols)
	if err := gguf.Dequantize(t, row, out); err != nil {
		panic(err)
	}
	return to64(out)
}

// gpuHalfFields are the byte offsets of gpuF16 scale fields in one block of each
// quantized type: random bytes there could be Inf or NaN.
var gpuHalfFields = map[gguf.Type][]int{
	gguf.TypeQ8_0: {0}, gguf.TypeQ4_0: {0}, gguf.TypeQ4_1: {0, 2}, gguf.TypeQ5_0: {0}, gguf.TypeQ5_1: {0, 2},
	gguf.TypeQ2_K: {80, 82}, gguf.TypeQ3_K: {108}, gguf.TypeQ4_K: {0, 2}, gguf.TypeQ5_K: {0, 2}, gguf.TypeQ6_K: {208},
}

// randomRows returns rows × cols values of type t with random quants and
// scales of magnitude about 1/64.
func randomRows(rng *rand.Rand, t gguf.Type, rows, cols int) []byte {
	rb, err := t.RowBytes(int64(cols))
	if err != nil {
		panic(err)
	}
	data := make([]byte, int(rb)*rows)
	switch t {
	case gguf.TypeF32:
		for i := 0; i < rows*cols; i++ {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(rng.NormFloat64())))
		}
		return data
	case gguf.TypeF16:
		for i := 0; i < rows*cols; i++ {
			binary.LittleEndian.PutUint16(data[2*i:], gguf.FP32ToFP16(float32(rng.NormFloat64())))
		}
		return data
	case gguf.TypeBF16:
		for i := 0; i < rows*cols; i++ {
			binary.LittleEndian.PutUint16(data[2*i:], uint16(math.Float32bits(float32(rng.NormFloat64()))>>16))
		}
		return data
	}
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	ts := t.TypeSize()
	for blk := 0; blk < len(data)/ts; blk++ {
		for _, off := range gpuHalfFields[t] {
			v := float32((0.5 + rng.Float64()) / 64)
			if off != 0 && (t == gguf.TypeQ4_1 || t == gguf.TypeQ5_1) {
				v = float32(rng.NormFloat64() / 8) // a min, either sign
			}
			binary.LittleEndian.PutUint16(data[blk*ts+off:], gguf.FP32ToFP16(v))
		}
	}
	return data
}
