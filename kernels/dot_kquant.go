package kernels

import "llmserve/gguf"

// Portable dot products of one weight row of a k-quant type (super-blocks of
// 256 values) with a row quantized to super-blocks of 256 (actQ8K). Each
// super-block's integer sums are exact; the sub-block minimums and offsets
// are applied through the activation's group sums.

// scaleMinK4 unpacks the eight 6-bit scales and eight 6-bit minimums that
// Q4_K and Q5_K pack into 12 bytes.
func scaleMinK4(s []byte) (sc, mn [8]uint8) {
	for j := range sc {
		sc[j], mn[j] = gguf.ScaleMinK4(j, s)
	}
	return sc, mn
}

// dotQ2_K — block: 16 bytes of 4-bit scale|4-bit min per group of 16, 64
// bytes of 2-bit values, f16 d, f16 dmin; value = d·sc·q - dmin·m.
func dotQ2_K(w []byte, x *actRow) float32 {
	var acc float32
	for b := range x.d {
		blk := w[b*84 : b*84+84]
		sc, qs := blk[:16], blk[16:80]
		xq, bs := x.q[b*256:b*256+256], x.b[b*16:b*16+16]
		mins := 0
		for g := 0; g < 16; g++ {
			mins += int(sc[g]>>4) * int(bs[g])
		}
		sum := 0
		for g := 0; g < 16; g++ {
			// Group g covers values 16g..16g+15; its 2-bit values sit in
			// bytes 32·(g/8) + 16·(g%2) + l at shift 2·((g/2)%4).
			half, shift, off := g/8, uint(2*((g/2)%4)), 16*(g%2)
			q := qs[32*half+off : 32*half+off+16]
			v := xq[16*g : 16*g+16]
			s := 0
			for l := 0; l < 16; l++ {
				s += int(q[l]>>shift&3) * int(v[l])
			}
			sum += int(sc[g]&15) * s
		}
		acc += x.d[b] * (gguf.FP16ToFP32(le16(blk[80:]))*float32(sum) - gguf.FP16ToFP32(le16(blk[82:]))*float32(mins))
	}
	return acc
}

// dotQ3_K — block: 32 bytes of high bits, 64 bytes of low 2 bits, 12 bytes
// of packed 6-bit scales, f16 d; value = d·(sc-32)·(q3-4).
func dotQ3_K(w []byte, x *actRow) float32 {
	var acc float32
	for b := range x.d {
		blk := w[b*110 : b*110+110]
		hm, qs := blk[:32], blk[32:96]
		sc := scalesQ3K(blk[96:108])
		xq := x.q[b*256 : b*256+256]
		sum := 0
		for g := 0; g < 16; g++ {
			half, j, off := g/8, uint((g/2)%4), 16*(g%2)
			q := qs[32*half+off : 32*half+off+16]
			h := hm[off : off+16]
			bit := uint(4*half) + j // bit of hm that holds the high bit
			v := xq[16*g : 16*g+16]
			s := 0
			for l := 0; l < 16; l++ {
				q3 := int(q[l]>>(2*j)&3) | int(h[l]>>bit&1)<<2
				s += (q3 - 4) * int(v[l])
			}
			sum += (int(sc[g]) - 32) * s
		}
		acc += x.d[b] * gguf.FP16ToFP32(le16(blk[108:])) * float32(sum)
	}
	return acc
}

// scalesQ3K unpacks Q3_K's sixteen 6-bit scales: the low 4 bits of scale g
// are nibble g%8 of bytes 0..7 (low nibbles first), the high 2 bits are the
// 2-bit field g/4... of bytes 8..11.
func scalesQ3K(s []byte) [16]uint8 {
	var sc [16]uint8
	for g := 0; g < 16; g++ {
		lo := s[g%8] >> (4 * uint(g/8)) & 15
		hi := s[8+g%4] >> (2 * uint(g/4)) & 3
		sc[g] = lo | hi<<4
	}
	return sc
}

// dotQ4_K — block: f16 d, f16 dmin, 12 bytes of packed 6-bit scales and
// minimums, 128 bytes of nibbles; value = d·sc·q - dmin·m per group of 32.
func dotQ4_K(w []byte, x *actRow) float32 {
	var acc float32
	for b := range x.d {
		blk := w[b*144 : b*144+144]
		sc, mn := scaleMinK4(blk[4:16])
		qs := blk[16:144]
		xq, bs := x.q[b*256:b*256+256], x.b[b*16:b*16+16]
		sum, mins := 0, 0
		for j := 0; j < 4; j++ {
			q := qs[32*j : 32*j+32]
			v := xq[64*j : 64*j+64]
			lo, hi := 0, 0
			for l := 0; l < 32; l++ {
				lo += int(q[l]&15) * int(v[l])
				hi += int(q[l]>>4) * int(v[l+32])
			}
			sum += int(sc[2*j])*lo + int(sc[2*j+1])*hi
		}
		for j := 0; j < 8; j++ {
			mins += int(mn[j]) * (int(bs[2*j]) + int(bs[2*j+1]))
		}
		acc += x.d[b] * (gguf.FP16ToFP32(le16(blk))*float32(sum) - gguf.FP16ToFP32(le16(blk[2:]))*float32(mins))
	}
	return acc
}

// dotQ5_K — block: f16 d, f16 dmin, 12 bytes of packed scales and minimums,
// 32 bytes of high bits, 128 bytes of low nibbles.
func dotQ5_K(w []byte, x *actRow) float32 {
	var acc float32
	for b := range x.d {
		blk := w[b*176 : b*176+176]
		sc, mn := scaleMinK4(blk[4:16])
		qh, qs := blk[16:48], blk[48:176]
		xq, bs := x.q[b*256:b*256+256], x.b[b*16:b*16+16]
		sum, mins := 0, 0
		for j := 0; j < 4; j++ {
			q := qs[32*j : 32*j+32]
			v := xq[64*j : 64*j+64]
			lo, hi := 0, 0
			for l := 0; l < 32; l++ {
				lo += (int(q[l]&15) | int(qh[l]>>(2*j)&1)<<4) * int(v[l])
				hi += (int(q[l]>>4) | int(qh[l]>>(2*j+1)&1)<<4) * int(v[l+32])
			}
			sum += int(sc[2*j])*lo + int(sc[2*j+1])*hi
		}
		for j := 0; j < 8; j++ {
			mins += int(mn[j]) * (int(bs[2*j]) + int(bs[2*j+1]))
		}
		acc += x.d[b] * (gguf.FP16ToFP32(le16(blk))*float32(sum) - gguf.FP16ToFP32(le16(blk[2:]))*float32(mins))
	}
	return acc
}

// dotQ6_K — block: 128 bytes of low nibbles, 64 bytes of high 2 bits, 16
// int8 scales, f16 d; value = d·sc·(q6-32) per group of 16. The -32 offset
// is applied through the activation's group sums.
func dotQ6_K(w []byte, x *actRow) float32 {
	var acc float32
	for b := range x.d {
		blk := w[b*210 : b*210+210]
		sc := blk[192:208]
		xq, bs := x.q[b*256:b*256+256], x.b[b*16:b*16+16]
		sum, offs := 0, 0
		for h := 0; h < 2; h++ {
			ql, qh := blk[64*h:64*h+64], blk[128+32*h:128+32*h+32]
			v := xq[128*h : 128*h+128]
			var s [8]int // sums of groups 8h..8h+7
			for l := 0; l < 32; l++ {
				g := l / 16
				q0 := int(ql[l]&15) | int(qh[l]&3)<<4
				q1 := int(ql[l+32]&15) | int(qh[l]>>2&3)<<4
				q2 := int(ql[l]>>4) | int(qh[l]>>4&3)<<4
				q3 := int(ql[l+32]>>4) | int(qh[l]>>6&3)<<4
				s[g] += q0 * int(v[l])
				s[g+2] += q1 * int(v[l+32])
				s[g+4] += q2 * int(v[l+64])
				s[g+6] += q3 * int(v[l+96])
			}
			for g := 0; g < 8; g++ {
				sum += int(int8(sc[8*h+g])) * s[g]
			}
		}
		for g := 0; g < 16; g++ {
			offs += int(int8(sc[g])) * int(bs[g])
		}
		acc += x.d[b] * gguf.FP16ToFP32(le16(blk[208:])) * float32(sum-32*offs)
	}
	return acc
}
