package gguf

import (
	"math"
	"testing"
)

// TestFP16RoundTrip: every half value widens to a float32 that narrows back
// to the same bits (NaNs to a quiet NaN of the same sign).
func TestFP16RoundTrip(t *testing.T) {
	for h := range 1 << 16 {
		f := FP16ToFP32(uint16(h))
		got := FP32ToFP16(f)
		want := uint16(h)
		if h&0x7c00 == 0x7c00 && h&0x3ff != 0 { // NaN
			if !math.IsNaN(float64(f)) {
				t.Fatalf("FP16ToFP32(%#04x) = %g, want NaN", h, f)
			}
			want = uint16(h)&0x8000 | 0x7e00
		}
		if got != want {
			t.Fatalf("FP32ToFP16(FP16ToFP32(%#04x) = %g) = %#04x, want %#04x", h, f, got, want)
		}
	}
}

// TestFP16Values checks widening against the value the bits stand for.
func TestFP16Values(t *testing.T) {
	for h := range 0x7c00 { // every finite positive half
		var want float64
		if e := h >> 10; e == 0 {
			want = math.Ldexp(float64(h&0x3ff), -24)
		} else {
			want = math.Ldexp(float64(h&0x3ff|0x400), e-25)
		}
		if got := FP16ToFP32(uint16(h)); float64(got) != want {
			t.Fatalf("FP16ToFP32(%#04x) = %g, want %g", h, got, want)
		}
		if got := FP16ToFP32(uint16(h) | 0x8000); float64(got) != -want {
			t.Fatalf("FP16ToFP32(%#04x) = %g, want %g", h|0x8000, got, -want)
		}
	}
	if got := FP16ToFP32(0x7c00); !math.IsInf(float64(got), 1) {
		t.Errorf("FP16ToFP32(0x7c00) = %g, want +Inf", got)
	}
}

// TestFP32ToFP16Rounding: values between two neighbouring halves round to
// the nearer one, and exact midpoints to the one with an even mantissa.
func TestFP32ToFP16Rounding(t *testing.T) {
	for h := range 0x7bff { // every pair of neighbouring finite halves
		lo, hi := float64(FP16ToFP32(uint16(h))), float64(FP16ToFP32(uint16(h+1)))
		mid := (lo + hi) / 2 // exact in float32: halves have 11 significant bits
		even := uint16(h)
		if h&1 == 1 {
			even = uint16(h + 1)
		}
		for _, c := range []struct {
			x    float32
			want uint16
		}{
			{float32(mid), even},
			{math.Nextafter32(float32(mid), float32(lo)), uint16(h)},
			{math.Nextafter32(float32(mid), float32(hi)), uint16(h + 1)},
			{-float32(mid), even | 0x8000},
		} {
			if got := FP32ToFP16(c.x); got != c.want {
				t.Fatalf("FP32ToFP16(%g) = %#04x, want %#04x (between %#04x and %#04x)", c.x, got, c.want, h, h+1)
			}
		}
	}
}

func TestFP32ToFP16Special(t *testing.T) {
	tests := []struct {
		x    float32
		want uint16
	}{
		{0, 0},
		{float32(math.Copysign(0, -1)), 0x8000},
		{65504, 0x7bff},
		{65519.99, 0x7bff},
		{65520, 0x7c00}, // the midpoint to 65536 rounds to even: infinity
		{1e10, 0x7c00},
		{-1e10, 0xfc00},
		{float32(math.Inf(1)), 0x7c00},
		{float32(math.Inf(-1)), 0xfc00},
		{float32(math.NaN()), 0x7e00},
		{math.Float32frombits(0xffc00001), 0xfe00},
		{math.Float32frombits(0x33000000), 0},      // 2⁻²⁵, a tie, rounds to even 0
		{math.Float32frombits(0x33000001), 1},      // just above: smallest subnormal
		{math.Float32frombits(0x387fc000), 0x03ff}, // largest subnormal
		{math.Float32frombits(0x387ff000), 0x0400}, // rounds up to the smallest normal
		{1e-30, 0},
	}
	for _, tc := range tests {
		if got := FP32ToFP16(tc.x); got != tc.want {
			t.Errorf("FP32ToFP16(%g [%#08x]) = %#04x, want %#04x", tc.x, math.Float32bits(tc.x), got, tc.want)
		}
	}
}

func TestBF16(t *testing.T) {
	tests := []struct {
		in   uint32 // float32 bits
		want uint16
	}{
		{0x3f800000, 0x3f80},             // 1
		{0x3f808000, 0x3f80},             // tie, even mantissa: down
		{0x3f818000, 0x3f82},             // tie, odd mantissa: up
		{0x3f808001, 0x3f81},             // above the tie: up
		{0x7f7fffff, 0x7f80},             // largest float rounds to infinity
		{0x7f800000, 0x7f80},             // +Inf
		{0xff800000, 0xff80},             // -Inf
		{0x7f800001, 0x7fc0},             // signalling NaN becomes quiet
		{0xffc12345, 0xffc1},             // quiet NaN keeps sign and payload
		{0x00010000, 0x0001},             // subnormals are rounded, not flushed
		{0x80008000, 0x8000},             // tiny negative subnormal tie: to even
		{math.Float32bits(-2.5), 0xc020}, // exact
	}
	for _, tc := range tests {
		if got := FP32ToBF16(math.Float32frombits(tc.in)); got != tc.want {
			t.Errorf("FP32ToBF16(%#08x) = %#04x, want %#04x", tc.in, got, tc.want)
		}
	}
	for h := range 1 << 16 {
		f := BF16ToFP32(uint16(h))
		if math.Float32bits(f) != uint32(h)<<16 {
			t.Fatalf("BF16ToFP32(%#04x) = %#08x", h, math.Float32bits(f))
		}
		want := uint16(h)
		if math.IsNaN(float64(f)) {
			want |= 0x40
		}
		if got := FP32ToBF16(f); got != want {
			t.Fatalf("FP32ToBF16(BF16ToFP32(%#04x)) = %#04x, want %#04x", h, got, want)
		}
	}
}
