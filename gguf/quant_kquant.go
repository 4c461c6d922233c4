package gguf

import (
	"encoding/binary"
	"math"
)

// The k-quant quantizers, following ggml's quantize_row_*_ref (the path
// llama.cpp's quantizer takes without an importance matrix). Block layouts
// are described in quant_kdequant.go.

// packQ2 packs 2-bit levels L[0:256] as Q2_K and Q3_K store them: byte l of
// each 32-byte half holds values l, l+32, l+64 and l+96 of its 128.
func packQ2(qs []byte, L []uint8) {
	for j := 0; j < QK_K; j += 128 {
		for l := range 32 {
			qs[j/4+l] = L[j+l] | L[j+l+32]<<2 | L[j+l+64]<<4 | L[j+l+96]<<6
		}
	}
}

func quantQ2_K(dst []byte, src []float32) {
	search := qkx2Search{nmax: 3, rmin: -0.5, rdelta: 0.1, nstep: 15, mad: true}
	var (
		L            [QK_K]uint8
		laux         [16]uint8
		weights      [16]float32
		scales, mins [QK_K / 16]float32
	)
	for i := 0; i < len(src)/QK_K; i++ {
		x, b := src[QK_K*i:QK_K*i+QK_K], dst[84*i:84*i+84]
		clear(b)
		var maxScale, maxMin float32
		for j := range QK_K / 16 {
			xg := x[16*j : 16*j+16]
			for l, v := range xg {
				weights[l] = abs32(v)
			}
			scales[j], mins[j] = search.fit(xg, weights[:], L[16*j:16*j+16], laux[:])
			maxScale = max(maxScale, scales[j])
			maxMin = max(maxMin, mins[j])
		}
		if maxScale > 0 {
			iscale := 15 / maxScale
			for j, s := range scales {
				b[j] = uint8(nearestInt(iscale * s))
			}
			putHalf(b[80:], maxScale/15)
		}
		if maxMin > 0 {
			iscale := 15 / maxMin
			for j, m := range mins {
				b[j] |= uint8(nearestInt(iscale*m)) << 4
			}
			putHalf(b[82:], maxMin/15)
		}
		d, dmin := half(b[80:]), half(b[82:])
		for j := range QK_K / 16 {
			dl := d * float32(b[j]&0xf)
			if dl == 0 {
				continue
			}
			ml := dmin * float32(b[j]>>4)
			for ii, v := range x[16*j : 16*j+16] {
				L[16*j+ii] = uint8(clamp32(nearestInt((v+ml)/dl), 0, 3))
			}
		}
		packQ2(b[16:80], L[:])
	}
}

func quantQ3_K(dst []byte, src []float32) {
	var (
		L      [QK_K]int8
		scales [QK_K / 16]float32
	)
	for i := 0; i < len(src)/QK_K; i++ {
		x, b := src[QK_K*i:QK_K*i+QK_K], dst[110*i:110*i+110]
		clear(b)
		var maxScale, amax float32
		for j := range QK_K / 16 {
			scales[j] = makeQ3Quants(4, x[16*j:16*j+16], L[16*j:16*j+16])
			if a := abs32(scales[j]); a > amax {
				amax, maxScale = a, scales[j]
			}
		}
		packed := b[96:108]
		if maxScale != 0 {
			iscale := -32 / maxScale
			for j, s := range scales {
				l := byte(clamp32(int32(int8(nearestInt(iscale*s))), -32, 31) + 32)
				if j < 8 {
					packed[j] = l & 0xf
				} else {
					packed[j-8] |= (l & 0xf) << 4
				}
				packed[8+j%4] |= (l >> 4) << (2 * (j / 4))
			}
			putHalf(b[108:], 1/iscale)
		}
		d := half(b[108:])
		sc := ScalesQ3K(packed)
		for j := range QK_K / 16 {
			dl := d * float32(sc[j])
			if dl == 0 {
				continue
			}
			for ii, v := range x[16*j : 16*j+16] {
				L[16*j+ii] = int8(clamp32(nearestInt(v/dl), -4, 3) + 4)
			}
		}
		// Bit 2 of each level goes to hmask: values 0-31 in bit 0, 32-63 in
		// bit 1 and so on; the low two bits are packed like Q2_K.
		var low [QK_K]uint8
		hmask := b[0:32]
		for j, l := range L {
			if l > 3 {
				hmask[j%32] |= 1 << (j / 32)
				l -= 4
			}
			low[j] = uint8(l)
		}
		packQ2(b[32:96], low[:])
	}
}

// packScalesK4 stores the 6-bit scales and mins of 8 groups in the 12 scale
// bytes of a Q4_K or Q5_K block (the inverse of ScaleMinK4).
func packScalesK4(packed []byte, ls, lm *[8]uint8) {
	for j := range 8 {
		if j < 4 {
			packed[j] = ls[j]
			packed[j+4] = lm[j]
		} else {
			packed[j+4] = ls[j]&0xf | (lm[j]&0xf)<<4
			packed[j-4] |= ls[j] >> 4 << 6
			packed[j] |= lm[j] >> 4 << 6
		}
	}
}

// quantK4Groups is the part Q4_K and Q5_K share: fit each group of 32 with
// the qkx2 search, quantize the group scales and mins to 6 bits against
// d = max/63, store d, dmin and the packed scales in b[0:16], and requantize
// the levels (0..nmax) against the stored scales into L.
func quantK4Groups(x []float32, b []byte, L *[QK_K]uint8, search qkx2Search) {
	var (
		laux         [32]uint8
		weights      [32]float32
		scales, mins [8]float32
		ls, lm       [8]uint8
	)
	var maxScale, maxMin float32
	for j := range 8 {
		xg := x[32*j : 32*j+32]
		var sumX2 float32
		for _, v := range xg {
			sumX2 += float32(v * v)
		}
		avX := float32(math.Sqrt(float64(sumX2 / 32)))
		for l, v := range xg {
			weights[l] = avX + abs32(v)
		}
		scales[j], mins[j] = search.fit(xg, weights[:], L[32*j:32*j+32], laux[:])
		if scales[j] > maxScale {
			maxScale = scales[j]
		}
		if mins[j] > maxMin {
			maxMin = mins[j]
		}
	}
	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	for j := range 8 {
		ls[j] = min(63, uint8(nearestInt(invScale*scales[j])))
		lm[j] = min(63, uint8(nearestInt(invMin*mins[j])))
	}
	packScalesK4(b[4:16], &ls, &lm)
	putHalf(b[0:], maxScale/63)
	putHalf(b[2:], maxMin/63)
	d, dmin := half(b[0:]), half(b[2:])
	for j := range 8 {
		sc, m := ScaleMinK4(j, b[4:16])
		dl := d * float32(sc)
		if dl == 0 {
			continue
		}
		dm := dmin * float32(m)
		for ii, v := range x[32*j : 32*j+32] {
			L[32*j+ii] = uint8(clamp32(nearestInt((v+dm)/dl), 0, search.nmax))
		}
	}
}

func quantQ4_K(dst []byte, src []float32) {
	search := qkx2Search{nmax: 15, rmin: -1, rdelta: 0.1, nstep: 20}
	var L [QK_K]uint8
	for i := 0; i < len(src)/QK_K; i++ {
		x, b := src[QK_K*i:QK_K*i+QK_K], dst[144*i:144*i+144]
		clear(b)
		quantK4Groups(x, b, &L, search)
		qs := b[16:144]
		for j := 0; j < QK_K; j += 64 {
			for l := range 32 {
				qs[j/2+l] = L[j+l] | L[j+l+32]<<4
			}
		}
	}
}

func quantQ5_K(dst []byte, src []float32) {
	search := qkx2Search{nmax: 31, rmin: -0.5, rdelta: 0.1, nstep: 15}
	var L [QK_K]uint8
	for i := 0; i < len(src)/QK_K; i++ {
		x, b := src[QK_K*i:QK_K*i+QK_K], dst[176*i:176*i+176]
		clear(b)
		quantK4Groups(x, b, &L, search)
		qh, qs := b[16:48], b[48:176]
		m1, m2 := byte(1), byte(2)
		for n := 0; n < QK_K; n += 64 {
			for j := range 32 {
				l1, l2 := L[n+j], L[n+j+32]
				if l1 > 15 {
					l1 -= 16
					qh[j] |= m1
				}
				if l2 > 15 {
					l2 -= 16
					qh[j] |= m2
				}
				qs[n/2+j] = l1 | l2<<4
			}
			m1 <<= 2
			m2 <<= 2
		}
	}
}

func quantQ6_K(dst []byte, src []float32) {
	var (
		L      [QK_K]int8
		scales [QK_K / 16]float32
	)
	for i := 0; i < len(src)/QK_K; i++ {
		x, b := src[QK_K*i:QK_K*i+QK_K], dst[210*i:210*i+210]
		clear(b)
		var maxScale, maxAbs float32
		for j := range QK_K / 16 {
			scales[j] = makeQXQuants(32, x[16*j:16*j+16], L[16*j:16*j+16])
			if a := abs32(scales[j]); a > maxAbs {
				maxAbs, maxScale = a, scales[j]
			}
		}
		if maxAbs < groupMaxEps {
			continue // an all-zero block: d = 0 and every byte 0
		}
		iscale := -128 / maxScale
		putHalf(b[208:], 1/iscale)
		for j, s := range scales {
			b[192+j] = byte(int8(min(127, nearestInt(iscale*s))))
		}
		d := half(b[208:])
		for j := range QK_K / 16 {
			dl := d * float32(int8(b[192+j]))
			if dl == 0 {
				continue
			}
			for ii, v := range x[16*j : 16*j+16] {
				L[16*j+ii] = int8(clamp32(nearestInt(v/dl), -32, 31) + 32)
			}
		}
		for n := range 2 {
			ql, qh, l := b[64*n:64*n+64], b[128+32*n:128+32*n+32], L[128*n:128*n+128]
			for j := range 32 {
				q1, q2, q3, q4 := uint8(l[j]), uint8(l[j+32]), uint8(l[j+64]), uint8(l[j+96])
				ql[j] = q1&0xf | (q3&0xf)<<4
				ql[j+32] = q2&0xf | (q4&0xf)<<4
				qh[j] = q1>>4 | q2>>4<<2 | q3>>4<<4 | q4>>4<<6
			}
		}
	}
}

func quantQ8_K(dst []byte, src []float32) {
	for i := 0; i < len(src)/QK_K; i++ {
		x, b := src[QK_K*i:QK_K*i+QK_K], dst[292*i:292*i+292]
		clear(b)
		amax, max := absMax(x)
		if amax == 0 {
			continue
		}
		iscale := -127 / max
		qs := b[4:260]
		for j, v := range x {
			qs[j] = byte(int8(min(127, nearestInt(iscale*v))))
		}
		for j := range QK_K / 16 {
			var sum int32
			for _, q := range qs[16*j : 16*j+16] {
				sum += int32(int8(q))
			}
			binary.LittleEndian.PutUint16(b[260+2*j:], uint16(int16(sum)))
		}
		binary.LittleEndian.PutUint32(b, math.Float32bits(1/iscale))
	}
}
