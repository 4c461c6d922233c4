package kernels

import "math"

// f16 widens an IEEE binary16 value to float32 exactly (subnormals,
// infinities and NaN included). The branch for normal numbers comes first:
// it is the only one quantization scales take in practice.
func f16(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	if exp-1 < 30 { // 1 <= exp <= 30: normal
		return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
	}
	if exp == 0x1f {
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	// Zero or subnormal: mant·2⁻²⁴.
	v := float32(mant) * (1.0 / (1 << 24))
	if sign != 0 {
		v = -v
	}
	return v
}

// bf16 widens a bfloat16 value to float32.
func bf16(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// le16 reads a little-endian uint16 at b[0:2].
func le16(b []byte) uint16 { return uint16(b[0]) | uint16(b[1])<<8 }
