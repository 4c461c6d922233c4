package kernels

import (
	"encoding/binary"

	"llmserve/gguf"
)

// WidenF16 converts len(dst) IEEE half values of src to float32 (exact).
// It is how KV cache cells kept in f16 are read.
func WidenF16(dst []float32, src []uint16) {
	src = src[:len(dst)]
	if widenAsm && len(dst) >= 8 {
		widenF16AVX2(&dst[0], &src[0], len(dst))
		return
	}
	for i, h := range src {
		dst[i] = gguf.FP16ToFP32(h)
	}
}

// WidenQ8_0 converts whole q8_0 blocks (34 bytes: an f16 scale d and 32
// int8 q) of src to float32 values q·d, 32 a block, filling dst, whose
// length must be a multiple of 32. It is how KV cache cells kept in q8_0
// are read; the values equal gguf.Dequantize's bit for bit.
func WidenQ8_0(dst []float32, src []byte) {
	nb := len(dst) / 32
	src = src[:nb*34]
	if widenAsm && nb > 0 {
		widenQ8_0AVX2(&dst[0], &src[0], nb)
		return
	}
	for b := 0; b < nb; b++ {
		blk, out := src[34*b:34*b+34], dst[32*b:32*b+32]
		d := gguf.FP16ToFP32(binary.LittleEndian.Uint16(blk))
		for j, q := range blk[2:34] {
			out[j] = float32(int8(q)) * d
		}
	}
}
