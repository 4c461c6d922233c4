package gguf

import (
	"encoding/binary"
	"math"
)

// The k-quant super-blocks of QK_K = 256 values. Layouts (little endian;
// d and dmin binary16 unless noted):
//
//	Q2_K (84 bytes):  scales[16], qs[64], d, dmin
//	    16 groups of 16; scales[g] = scale (low nibble) | min (high nibble)
//	Q3_K (110 bytes): hmask[32], qs[64], scales[12], d
//	    16 groups of 16 with signed 6-bit scales packed in 12 bytes
//	Q4_K (144 bytes): d, dmin, scales[12], qs[128]
//	    8 groups of 32 with 6-bit scales and mins packed in 12 bytes
//	Q5_K (176 bytes): d, dmin, scales[12], qh[32], qs[128]
//	Q6_K (210 bytes): ql[128], qh[64], scales[16] (int8), d
//	Q8_K (292 bytes): d (float32), qs[256] (int8), bsums[16] (int16)
//
// As in quant_legacy.go, products are rounded to float32 before a min is
// subtracted, matching ggml's reference.

// ScaleMinK4 unpacks the 6-bit scale and min of group j (0..7) from the 12
// packed scale bytes of a Q4_K or Q5_K block.
func ScaleMinK4(j int, scales []byte) (sc, m uint8) {
	if j < 4 {
		return scales[j] & 63, scales[j+4] & 63
	}
	return scales[j+4]&0xf | scales[j-4]>>6<<4, scales[j+4]>>4 | scales[j]>>6<<4
}

// ScalesQ3K unpacks the 16 signed 6-bit group scales (-32..31) from the 12
// packed scale bytes of a Q3_K block: the low nibbles of bytes 0-7 hold
// groups 0-7 and their high nibbles groups 8-15; the top two bits of group
// j are bits 2(j/4)..2(j/4)+1 of byte 8 + j%4.
func ScalesQ3K(packed []byte) [16]int32 {
	var sc [16]int32
	for j := range 16 {
		lo := packed[j%8] >> (4 * (j / 8)) & 0xf
		hi := packed[8+j%4] >> (2 * (j / 4)) & 3
		sc[j] = int32(lo|hi<<4) - 32
	}
	return sc
}

func dequantQ2_K(dst []float32, src []byte) {
	for i := 0; i < len(dst)/QK_K; i++ {
		b, y := src[84*i:84*i+84], dst[QK_K*i:QK_K*i+QK_K]
		scales, qs := b[0:16], b[16:80]
		d, dmin := half(b[80:]), half(b[82:])
		k, g := 0, 0
		for n := range 2 {
			q := qs[32*n : 32*n+32]
			for shift := 0; shift < 8; shift += 2 {
				for h := range 2 {
					sc := scales[g]
					g++
					dl, ml := d*float32(sc&0xf), dmin*float32(sc>>4)
					for _, v := range q[16*h : 16*h+16] {
						y[k] = float32(dl*float32(v>>shift&3)) - ml
						k++
					}
				}
			}
		}
	}
}

func dequantQ3_K(dst []float32, src []byte) {
	for i := 0; i < len(dst)/QK_K; i++ {
		b, y := src[110*i:110*i+110], dst[QK_K*i:QK_K*i+QK_K]
		hmask, qs := b[0:32], b[32:96]
		sc := ScalesQ3K(b[96:108])
		d := half(b[108:])
		k, g := 0, 0
		m := byte(1)
		for n := range 2 {
			q := qs[32*n : 32*n+32]
			for shift := 0; shift < 8; shift += 2 {
				for h := range 2 {
					dl := d * float32(sc[g])
					g++
					for l := 16 * h; l < 16*h+16; l++ {
						v := int32(q[l] >> shift & 3)
						if hmask[l]&m == 0 {
							v -= 4
						}
						y[k] = dl * float32(v)
						k++
					}
				}
				m <<= 1
			}
		}
	}
}

func dequantQ4_K(dst []float32, src []byte) {
	for i := 0; i < len(dst)/QK_K; i++ {
		b, y := src[144*i:144*i+144], dst[QK_K*i:QK_K*i+QK_K]
		d, dmin := half(b), half(b[2:])
		scales, qs := b[4:16], b[16:144]
		for j := range 4 {
			sc, m := ScaleMinK4(2*j, scales)
			d1, m1 := d*float32(sc), dmin*float32(m)
			sc, m = ScaleMinK4(2*j+1, scales)
			d2, m2 := d*float32(sc), dmin*float32(m)
			lo, hi := y[64*j:64*j+32], y[64*j+32:64*j+64]
			for l, q := range qs[32*j : 32*j+32] {
				lo[l] = float32(d1*float32(q&0xf)) - m1
				hi[l] = float32(d2*float32(q>>4)) - m2
			}
		}
	}
}

func dequantQ5_K(dst []float32, src []byte) {
	for i := 0; i < len(dst)/QK_K; i++ {
		b, y := src[176*i:176*i+176], dst[QK_K*i:QK_K*i+QK_K]
		d, dmin := half(b), half(b[2:])
		scales, qh, qs := b[4:16], b[16:48], b[48:176]
		for j := range 4 {
			sc, m := ScaleMinK4(2*j, scales)
			d1, m1 := d*float32(sc), dmin*float32(m)
			sc, m = ScaleMinK4(2*j+1, scales)
			d2, m2 := d*float32(sc), dmin*float32(m)
			u1, u2 := byte(1)<<(2*j), byte(2)<<(2*j)
			lo, hi := y[64*j:64*j+32], y[64*j+32:64*j+64]
			for l, q := range qs[32*j : 32*j+32] {
				q1, q2 := q&0xf, q>>4
				if qh[l]&u1 != 0 {
					q1 += 16
				}
				if qh[l]&u2 != 0 {
					q2 += 16
				}
				lo[l] = float32(d1*float32(q1)) - m1
				hi[l] = float32(d2*float32(q2)) - m2
			}
		}
	}
}

func dequantQ6_K(dst []float32, src []byte) {
	for i := 0; i < len(dst)/QK_K; i++ {
		b, y := src[210*i:210*i+210], dst[QK_K*i:QK_K*i+QK_K]
		d := half(b[208:])
		for n := range 2 {
			ql, qh, sc := b[64*n:64*n+64], b[128+32*n:128+32*n+32], b[192+8*n:192+8*n+8]
			yy := y[128*n : 128*n+128]
			for l := range 32 {
				is := l / 16
				q1 := int32(ql[l]&0xf|(qh[l]>>0&3)<<4) - 32
				q2 := int32(ql[l+32]&0xf|(qh[l]>>2&3)<<4) - 32
				q3 := int32(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
				q4 := int32(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
				yy[l] = d * float32(int8(sc[is])) * float32(q1)
				yy[l+32] = d * float32(int8(sc[is+2])) * float32(q2)
				yy[l+64] = d * float32(int8(sc[is+4])) * float32(q3)
				yy[l+96] = d * float32(int8(sc[is+6])) * float32(q4)
			}
		}
	}
}

func dequantQ8_K(dst []float32, src []byte) {
	for i := 0; i < len(dst)/QK_K; i++ {
		b, y := src[292*i:292*i+292], dst[QK_K*i:QK_K*i+QK_K]
		d := math.Float32frombits(binary.LittleEndian.Uint32(b))
		for j, q := range b[4:260] {
			y[j] = d * float32(int8(q))
		}
	}
}
