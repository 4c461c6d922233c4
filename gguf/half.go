package gguf

import "math"

// FP16ToFP32 widens an IEEE binary16 value to float32. Every half value,
// subnormals, infinities and NaN payloads included, is represented exactly.
func FP16ToFP32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f: // infinity or NaN, payload kept
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp != 0: // normal: rebias the exponent from 15 to 127
		return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
	case mant == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal half: mant·2⁻²⁴, normalized so the leading one becomes implicit.
	e := uint32(113)
	for mant&0x400 == 0 {
		mant <<= 1
		e--
	}
	return math.Float32frombits(sign | e<<23 | (mant&0x3ff)<<13)
}

// FP32ToFP16 narrows a float32 to IEEE binary16, rounding to nearest with
// ties to even like ggml (and the F16C instruction it uses). Values too large
// for a half become infinity; a NaN becomes the quiet NaN 0x7e00 with the
// input's sign.
func FP32ToFP16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	abs := b & 0x7fffffff
	switch {
	case abs > 0x7f800000:
		return sign | 0x7e00
	case abs >= 0x47800000: // 2¹⁶ and above, infinity included
		return sign | 0x7c00
	case abs >= 0x38800000: // normal half range, 2⁻¹⁴ and above
		// Rebias the exponent and drop 13 mantissa bits; a carry out of the
		// mantissa correctly bumps the exponent (up to infinity).
		return sign | roundShift(abs-112<<23, 13)
	case abs < 0x33000000: // below 2⁻²⁵: rounds to zero
		return sign
	}
	// Subnormal half: the value in units of 2⁻²⁴ is mant·2^(exp-126).
	exp := abs >> 23
	mant := abs&0x7fffff | 0x800000
	return sign | roundShift(mant, 126-exp)
}

// roundShift returns v >> s rounded to nearest, ties to even. 0 < s < 32.
func roundShift(v, s uint32) uint16 {
	r := v >> s
	rem := v & (1<<s - 1)
	half := uint32(1) << (s - 1)
	if rem > half || (rem == half && r&1 == 1) {
		r++
	}
	return uint16(r)
}

// BF16ToFP32 widens a bfloat16 value to float32 (exact).
func BF16ToFP32(h uint16) float32 {
	return math.Float32frombits(uint32(h) << 16)
}

// FP32ToBF16 narrows a float32 to bfloat16 with round to nearest, ties to
// even. Like ggml, a NaN keeps its sign and upper payload bits and is made
// quiet; subnormals are rounded, not flushed.
func FP32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}
