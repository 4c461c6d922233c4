package gguf

import (
	"encoding/binary"
	"math"
)

// The plain float types: one value per block.

func dequantF32(dst []float32, src []byte) {
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
	}
}

func quantF32(dst []byte, src []float32) {
	for i, v := range src {
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
	}
}

func dequantF16(dst []float32, src []byte) {
	for i := range dst {
		dst[i] = FP16ToFP32(binary.LittleEndian.Uint16(src[2*i:]))
	}
}

func quantF16(dst []byte, src []float32) {
	for i, v := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], FP32ToFP16(v))
	}
}

func dequantBF16(dst []float32, src []byte) {
	for i := range dst {
		dst[i] = BF16ToFP32(binary.LittleEndian.Uint16(src[2*i:]))
	}
}

func quantBF16(dst []byte, src []float32) {
	for i, v := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], FP32ToBF16(v))
	}
}

// half reads the little-endian binary16 at b[0:2] as a float32.
func half(b []byte) float32 {
	return FP16ToFP32(binary.LittleEndian.Uint16(b))
}

// putHalf stores f as a little-endian binary16 at b[0:2].
func putHalf(b []byte, f float32) {
	binary.LittleEndian.PutUint16(b, FP32ToFP16(f))
}
