package kernels

import "llmserve/gguf"

// Portable dot products of one weight row of a legacy block type (blocks of
// 32 values) with a row quantized to blocks of 32. In every block the
// integer sum is exact; only the per-block scaling is in float32.

// dotQ4_0 — block: f16 d, 16 bytes of nibbles; value j is d·(lo(j)-8),
// value j+16 is d·(hi(j)-8).
func dotQ4_0(w []byte, x *actRow) float32 {
	var acc float32
	for b := range x.d {
		blk := w[b*18 : b*18+18]
		q := x.q[b*32 : b*32+32]
		sum := 0
		for j := 0; j < 16; j++ {
			sum += (int(blk[2+j]&15)-8)*int(q[j]) + (int(blk[2+j]>>4)-8)*int(q[j+16])
		}
		acc += gguf.FP16ToFP32(le16(blk)) * x.d[b] * float32(sum)
	}
	return acc
}

// dotQ4_1 — block: f16 d, f16 m, 16 bytes of nibbles; value = d·q + m.
func dotQ4_1(w []byte, x *actRow) float32 {
	var acc float32
	for b := range x.d {
		blk := w[b*20 : b*20+20]
		q := x.q[b*32 : b*32+32]
		sum := 0
		for j := 0; j < 16; j++ {
			sum += int(blk[4+j]&15)*int(q[j]) + int(blk[4+j]>>4)*int(q[j+16])
		}
		acc += gguf.FP16ToFP32(le16(blk))*x.d[b]*float32(sum) + gguf.FP16ToFP32(le16(blk[2:]))*x.s[b]
	}
	return acc
}

// dotQ5_0 — block: f16 d, 32 high bits, 16 bytes of low nibbles; value =
// d·(q5-16).
func dotQ5_0(w []byte, x *actRow) float32 {
	var acc float32
	for b := range x.d {
		blk := w[b*22 : b*22+22]
		q := x.q[b*32 : b*32+32]
		qh := uint32(blk[2]) | uint32(blk[3])<<8 | uint32(blk[4])<<16 | uint32(blk[5])<<24
		sum := 0
		for j := 0; j < 16; j++ {
			lo := int(blk[6+j]&15) | int(qh>>j&1)<<4
			hi := int(blk[6+j]>>4) | int(qh>>(j+16)&1)<<4
			sum += (lo-16)*int(q[j]) + (hi-16)*int(q[j+16])
		}
		acc += gguf.FP16ToFP32(le16(blk)) * x.d[b] * float32(sum)
	}
	return acc
}

// dotQ5_1 — block: f16 d, f16 m, 32 high bits, 16 bytes of low nibbles;
// value = d·q5 + m.
func dotQ5_1(w []byte, x *actRow) float32 {
	var acc float32
	for b := range x.d {
		blk := w[b*24 : b*24+24]
		q := x.q[b*32 : b*32+32]
		qh := uint32(blk[4]) | uint32(blk[5])<<8 | uint32(blk[6])<<16 | uint32(blk[7])<<24
		sum := 0
		for j := 0; j < 16; j++ {
			lo := int(blk[8+j]&15) | int(qh>>j&1)<<4
			hi := int(blk[8+j]>>4) | int(qh>>(j+16)&1)<<4
			sum += lo*int(q[j]) + hi*int(q[j+16])
		}
		acc += gguf.FP16ToFP32(le16(blk))*x.d[b]*float32(sum) + gguf.FP16ToFP32(le16(blk[2:]))*x.s[b]
	}
	return acc
}

// dotQ8_0 — block: f16 d, 32 int8; value = d·q.
func dotQ8_0(w []byte, x *actRow) float32 {
	var acc float32
	for b := range x.d {
		blk := w[b*34 : b*34+34]
		q := x.q[b*32 : b*32+32]
		sum := 0
		for j, v := range blk[2:34] {
			sum += int(int8(v)) * int(q[j])
		}
		acc += gguf.FP16ToFP32(le16(blk)) * x.d[b] * float32(sum)
	}
	return acc
}
