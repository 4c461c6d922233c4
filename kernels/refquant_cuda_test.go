//go:build cuda

package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"

	"llmserve/gguf"
)

// This file holds the tests' own reference dequantizer, written after
// ggml's dequantize_row_* loops (block by block, not in the kernels'
// 32-value chunks), and a generator of random blocks with sane scales.

func f16(b []byte) float64 { return float64(halfToFloat(binary.LittleEndian.Uint16(b))) }

func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	man := uint32(h) & 0x3ff
	switch {
	case exp == 0 && man == 0:
		return math.Float32frombits(sign)
	case exp == 0:
		for man&0x400 == 0 {
			man <<= 1
			exp--
		}
		exp++
		man &= 0x3ff
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	}
	return math.Float32frombits(sign | (exp+112)<<23 | man<<13)
}

func floatToHalf(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int((b>>23)&0xff) - 127 + 15
	man := b & 0x7fffff
	if exp <= 0 || exp >= 31 {
		return sign // tests only use normal magnitudes
	}
	h := sign | uint16(exp)<<10 | uint16(man>>13)
	if man&0x1fff > 0x1000 || (man&0x1fff == 0x1000 && h&1 == 1) {
		h++
	}
	return h
}

// refDequant dequantizes one row of cols values stored as t.
func refDequant(t gguf.Type, row []byte, cols int) []float64 {
	y := make([]float64, 0, cols)
	switch t {
	case gguf.TypeF32:
		for i := 0; i < cols; i++ {
			y = append(y, float64(math.Float32frombits(binary.LittleEndian.Uint32(row[4*i:]))))
		}
	case gguf.TypeF16:
		for i := 0; i < cols; i++ {
			y = append(y, f16(row[2*i:]))
		}
	case gguf.TypeBF16:
		for i := 0; i < cols; i++ {
			y = append(y, float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(row[2*i:]))<<16)))
		}
	case gguf.TypeQ8_0:
		for b := row; len(y) < cols; b = b[34:] {
			d := f16(b)
			for j := 0; j < 32; j++ {
				y = append(y, d*float64(int8(b[2+j])))
			}
		}
	case gguf.TypeQ4_0, gguf.TypeQ4_1:
		bs := 18
		if t == gguf.TypeQ4_1 {
			bs = 20
		}
		for b := row; len(y) < cols; b = b[bs:] {
			d, m, qs := f16(b), -8*f16(b), b[2:18]
			if t == gguf.TypeQ4_1 {
				m, qs = f16(b[2:]), b[4:20]
			}
			var out [32]float64
			for j := 0; j < 16; j++ {
				out[j] = d*float64(qs[j]&0xf) + m
				out[j+16] = d*float64(qs[j]>>4) + m
			}
			y = append(y, out[:]...)
		}
	case gguf.TypeQ5_0, gguf.TypeQ5_1:
		bs := 22
		if t == gguf.TypeQ5_1 {
			bs = 24
		}
		for b := row; len(y) < cols; b = b[bs:] {
			d, m, qh, qs := f16(b), -16*f16(b), binary.LittleEndian.Uint32(b[2:]), b[6:22]
			if t == gguf.TypeQ5_1 {
				m, qh, qs = f16(b[2:]), binary.LittleEndian.Uint32(b[4:]), b[8:24]
			}
			var out [32]float64
			for j := 0; j < 16; j++ {
				xh0 := ((qh >> j) << 4) & 0x10
				xh1 := (qh >> (j + 12)) & 0x10
				out[j] = d*float64(uint32(qs[j]&0xf)|xh0) + m
				out[j+16] = d*float64(uint32(qs[j]>>4)|xh1) + m
			}
			y = append(y, out[:]...)
		}
	case gguf.TypeQ2_K:
		for b := row; len(y) < cols; b = b[84:] {
			sc, q, d, dmin := b[:16], b[16:80], f16(b[80:]), f16(b[82:])
			is := 0
			for n := 0; n < 2; n++ {
				for shift := 0; shift < 8; shift += 2 {
					for h := 0; h < 2; h++ {
						s := sc[is]
						is++
						dl, ml := d*float64(s&0xf), dmin*float64(s>>4)
						for l := 0; l < 16; l++ {
							y = append(y, dl*float64((q[32*n+16*h+l]>>shift)&3)-ml)
						}
					}
				}
			}
		}
	case gguf.TypeQ3_K:
		for b := row; len(y) < cols; b = b[110:] {
			hm, q, d := b[:32], b[32:96], f16(b[108:])
			var aux [4]uint32
			for i := 0; i < 3; i++ {
				aux[i] = binary.LittleEndian.Uint32(b[96+4*i:])
			}
			const k1, k2 = 0x03030303, 0x0f0f0f0f
			tmp := aux[2]
			aux[2] = ((aux[0] >> 4) & k2) | (((tmp >> 4) & k1) << 4)
			aux[3] = ((aux[1] >> 4) & k2) | (((tmp >> 6) & k1) << 4)
			aux[0] = (aux[0] & k2) | (((tmp >> 0) & k1) << 4)
			aux[1] = (aux[1] & k2) | (((tmp >> 2) & k1) << 4)
			var scales [16]int
			for i := range scales {
				scales[i] = int(int8(byte(aux[i/4]>>(8*(i%4))))) - 32
			}
			is, m := 0, byte(1)
			for n := 0; n < 2; n++ {
				for shift := 0; shift < 8; shift += 2 {
					for h := 0; h < 2; h++ {
						dl := d * float64(scales[is])
						is++
						for l := 0; l < 16; l++ {
							v := int((q[32*n+16*h+l] >> shift) & 3)
							if hm[16*h+l]&m == 0 {
								v -= 4
							}
							y = append(y, dl*float64(v))
						}
					}
					m <<= 1
				}
			}
		}
	case gguf.TypeQ4_K, gguf.TypeQ5_K:
		bs := 144
		if t == gguf.TypeQ5_K {
			bs = 176
		}
		for b := row; len(y) < cols; b = b[bs:] {
			d, dmin, sc := f16(b), f16(b[2:]), b[4:16]
			ql, qh := b[16:144], []byte(nil)
			if t == gguf.TypeQ5_K {
				qh, ql = b[16:48], b[48:176]
			}
			is := 0
			u1, u2 := byte(1), byte(2)
			for j := 0; j < 256; j += 64 {
				s1, m1 := scaleMinK4(is, sc)
				s2, m2 := scaleMinK4(is+1, sc)
				d1, mm1, d2, mm2 := d*float64(s1), dmin*float64(m1), d*float64(s2), dmin*float64(m2)
				for l := 0; l < 32; l++ {
					v := float64(ql[l] & 0xf)
					if qh != nil && qh[l]&u1 != 0 {
						v += 16
					}
					y = append(y, d1*v-mm1)
				}
				for l := 0; l < 32; l++ {
					v := float64(ql[l] >> 4)
					if qh != nil && qh[l]&u2 != 0 {
						v += 16
					}
					y = append(y, d2*v-mm2)
				}
				ql = ql[32:]
				is += 2
				u1 <<= 2
				u2 <<= 2
			}
		}
	case gguf.TypeQ6_K:
		for b := row; len(y) < cols; b = b[210:] {
			ql, qh, sc, d := b[:128], b[128:192], b[192:208], f16(b[208:])
			var out [256]float64
			for n := 0; n < 2; n++ {
				for l := 0; l < 32; l++ {
					is := l / 16
					q1 := int(ql[l]&0xf|((qh[l]>>0)&3)<<4) - 32
					q2 := int(ql[l+32]&0xf|((qh[l]>>2)&3)<<4) - 32
					q3 := int(ql[l]>>4|((qh[l]>>4)&3)<<4) - 32
					q4 := int(ql[l+32]>>4|((qh[l]>>6)&3)<<4) - 32
					out[128*n+l] = d * float64(int8(sc[is])) * float64(q1)
					out[128*n+l+32] = d * float64(int8(sc[is+2])) * float64(q2)
					out[128*n+l+64] = d * float64(int8(sc[is+4])) * float64(q3)
					out[128*n+l+96] = d * float64(int8(sc[is+6])) * float64(q4)
				}
				ql, qh, sc = ql[64:], qh[32:], sc[8:]
			}
			y = append(y, out[:]...)
		}
	default:
		panic("refDequant: type " + t.String())
	}
	return y
}

func scaleMinK4(j int, q []byte) (byte, byte) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return (q[j+4] & 0xf) | ((q[j-4] >> 6) << 4), (q[j+4] >> 4) | ((q[j] >> 6) << 4)
}

// halfFields are the byte offsets of f16 scale fields in one block of each
// quantized type: random bytes there could be Inf or NaN.
var halfFields = map[gguf.Type][]int{
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
			binary.LittleEndian.PutUint16(data[2*i:], floatToHalf(float32(rng.NormFloat64())))
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
		for _, off := range halfFields[t] {
			v := float32((0.5 + rng.Float64()) / 64)
			if off != 0 && (t == gguf.TypeQ4_1 || t == gguf.TypeQ5_1) {
				v = float32(rng.NormFloat64() / 8) // a min, either sign
			}
			binary.LittleEndian.PutUint16(data[blk*ts+off:], floatToHalf(v))
		}
	}
	return data
}
