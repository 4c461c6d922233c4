package gguf

import (
	"encoding/binary"
	"math"
)

// The legacy 32-value block types. Layouts (little endian, d and m binary16):
//
//	Q4_0 (18 bytes): d, qs[16]          value = (q - 8)·d
//	Q4_1 (20 bytes): d, m, qs[16]       value = q·d + m
//	Q5_0 (22 bytes): d, qh[4], qs[16]   value = (q - 16)·d, bit 4 of q in qh
//	Q5_1 (24 bytes): d, m, qh[4], qs[16] value = q·d + m
//	Q8_0 (34 bytes): d, qs[32] (int8)   value = q·d
//
// In the 4- and 5-bit types, byte j of qs holds value j in its low nibble and
// value j+16 in its high nibble; bit j of qh is bit 4 of value j.
//
// Products are converted to float32 before they are added, so that no
// platform fuses them into one rounding: ggml's reference rounds twice.

const qk32 = 32 // values in a legacy block

func dequantQ4_0(dst []float32, src []byte) {
	for i := 0; i < len(dst)/qk32; i++ {
		b, y := src[18*i:18*i+18], dst[qk32*i:qk32*i+qk32]
		d := half(b)
		for j, q := range b[2:18] {
			y[j] = float32(int32(q&0xf)-8) * d
			y[j+16] = float32(int32(q>>4)-8) * d
		}
	}
}

func dequantQ4_1(dst []float32, src []byte) {
	for i := 0; i < len(dst)/qk32; i++ {
		b, y := src[20*i:20*i+20], dst[qk32*i:qk32*i+qk32]
		d, m := half(b), half(b[2:])
		for j, q := range b[4:20] {
			y[j] = float32(float32(q&0xf)*d) + m
			y[j+16] = float32(float32(q>>4)*d) + m
		}
	}
}

func dequantQ5_0(dst []float32, src []byte) {
	for i := 0; i < len(dst)/qk32; i++ {
		b, y := src[22*i:22*i+22], dst[qk32*i:qk32*i+qk32]
		d := half(b)
		qh := binary.LittleEndian.Uint32(b[2:])
		for j, q := range b[6:22] {
			h0 := byte(qh>>j<<4) & 0x10
			h1 := byte(qh>>(j+12)) & 0x10
			y[j] = float32(int32(q&0xf|h0)-16) * d
			y[j+16] = float32(int32(q>>4|h1)-16) * d
		}
	}
}

func dequantQ5_1(dst []float32, src []byte) {
	for i := 0; i < len(dst)/qk32; i++ {
		b, y := src[24*i:24*i+24], dst[qk32*i:qk32*i+qk32]
		d, m := half(b), half(b[2:])
		qh := binary.LittleEndian.Uint32(b[4:])
		for j, q := range b[8:24] {
			h0 := byte(qh>>j<<4) & 0x10
			h1 := byte(qh>>(j+12)) & 0x10
			y[j] = float32(float32(q&0xf|h0)*d) + m
			y[j+16] = float32(float32(q>>4|h1)*d) + m
		}
	}
}

func dequantQ8_0(dst []float32, src []byte) {
	for i := 0; i < len(dst)/qk32; i++ {
		b, y := src[34*i:34*i+34], dst[qk32*i:qk32*i+qk32]
		d := half(b)
		for j, q := range b[2:34] {
			y[j] = float32(int8(q)) * d
		}
	}
}

// quantQ4_0 follows quantize_row_q4_0_ref: the value of largest magnitude
// maps to -8.
func quantQ4_0(dst []byte, src []float32) {
	for i := 0; i < len(src)/qk32; i++ {
		x, b := src[qk32*i:qk32*i+qk32], dst[18*i:18*i+18]
		_, max := absMax(x)
		d := max / -8
		id := inverse(d)
		putHalf(b, d)
		for j := range 16 {
			q0 := min(15, int32(float32(x[j]*id)+8.5))
			q1 := min(15, int32(float32(x[j+16]*id)+8.5))
			b[2+j] = byte(q0) | byte(q1)<<4
		}
	}
}

// quantQ4_1 follows quantize_row_q4_1_ref: min and max span 16 levels.
func quantQ4_1(dst []byte, src []float32) {
	for i := 0; i < len(src)/qk32; i++ {
		x, b := src[qk32*i:qk32*i+qk32], dst[20*i:20*i+20]
		lo, hi := minMax(x)
		d := (hi - lo) / 15
		id := inverse(d)
		putHalf(b, d)
		putHalf(b[2:], lo)
		for j := range 16 {
			q0 := min(15, int32(float32((x[j]-lo)*id)+0.5))
			q1 := min(15, int32(float32((x[j+16]-lo)*id)+0.5))
			b[4+j] = byte(q0) | byte(q1)<<4
		}
	}
}

// quantQ5_0 follows quantize_row_q5_0_ref: the value of largest magnitude
// maps to -16.
func quantQ5_0(dst []byte, src []float32) {
	for i := 0; i < len(src)/qk32; i++ {
		x, b := src[qk32*i:qk32*i+qk32], dst[22*i:22*i+22]
		_, max := absMax(x)
		d := max / -16
		id := inverse(d)
		putHalf(b, d)
		var qh uint32
		for j := range 16 {
			q0 := min(31, int32(float32(x[j]*id)+16.5))
			q1 := min(31, int32(float32(x[j+16]*id)+16.5))
			b[6+j] = byte(q0&0xf) | byte(q1&0xf)<<4
			qh |= uint32(q0>>4&1)<<j | uint32(q1>>4&1)<<(j+16)
		}
		binary.LittleEndian.PutUint32(b[2:], qh)
	}
}

// quantQ5_1 follows quantize_row_q5_1_ref: min and max span 32 levels.
func quantQ5_1(dst []byte, src []float32) {
	for i := 0; i < len(src)/qk32; i++ {
		x, b := src[qk32*i:qk32*i+qk32], dst[24*i:24*i+24]
		lo, hi := minMax(x)
		d := (hi - lo) / 31
		id := inverse(d)
		putHalf(b, d)
		putHalf(b[2:], lo)
		var qh uint32
		for j := range 16 {
			q0 := uint8(int32(float32((x[j]-lo)*id) + 0.5))
			q1 := uint8(int32(float32((x[j+16]-lo)*id) + 0.5))
			b[8+j] = q0&0xf | (q1&0xf)<<4
			qh |= uint32(q0>>4&1)<<j | uint32(q1>>4&1)<<(j+16)
		}
		binary.LittleEndian.PutUint32(b[4:], qh)
	}
}

// quantQ8_0 follows quantize_row_q8_0_ref: d = max|x|/127, rounding half
// away from zero.
func quantQ8_0(dst []byte, src []float32) {
	for i := 0; i < len(src)/qk32; i++ {
		x, b := src[qk32*i:qk32*i+qk32], dst[34*i:34*i+34]
		amax, _ := absMax(x)
		d := amax / 127
		id := inverse(d)
		putHalf(b, d)
		for j, v := range x {
			b[2+j] = byte(int8(math.Round(float64(v * id))))
		}
	}
}

// absMax returns the largest magnitude in x and the first value that has it
// (0, 0 for an empty or all-zero x).
func absMax(x []float32) (amax, max float32) {
	for _, v := range x {
		if a := abs32(v); a > amax {
			amax, max = a, v
		}
	}
	return amax, max
}

// minMax returns the smallest and the largest value of a non-empty x.
func minMax(x []float32) (lo, hi float32) {
	lo, hi = math.MaxFloat32, -math.MaxFloat32
	for _, v := range x {
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	return lo, hi
}

// inverse returns 1/d, or 0 for d = 0.
func inverse(d float32) float32 {
	if d == 0 {
		return 0
	}
	return 1 / d
}

func abs32(v float32) float32 {
	return math.Float32frombits(math.Float32bits(v) &^ (1 << 31))
}
