package gguf

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"llmserve/internal/nmse"
)

// gaussian returns n seeded samples of N(0, sigma²).
func gaussian(n int, sigma float64, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 7))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * sigma)
	}
	return x
}

// roundTrip quantizes x as t and dequantizes it again.
func roundTrip(t *testing.T, typ Type, x []float32) ([]byte, []float32) {
	t.Helper()
	n, err := typ.RowBytes(int64(len(x)))
	if err != nil {
		t.Fatal(err)
	}
	q := make([]byte, n)
	if err := Quantize(typ, x, q); err != nil {
		t.Fatal(err)
	}
	y := make([]float32, len(x))
	if err := Dequantize(typ, q, y); err != nil {
		t.Fatal(err)
	}
	return q, y
}

// roundTripCases are the quantizable types with the NMSE bound each meets on
// Gaussian data (measured: about 85% of the bound) and how far
// requantizing a dequantized tensor reproduces it: "blocks" (the same
// bytes), "values" (the same dequantized values through other scales) or
// "" (neither in general: the search may settle elsewhere).
var roundTripCases = []struct {
	typ        Type
	maxNMSE    float64
	idempotent string
}{
	{TypeF16, 1e-7, "blocks"},    // measured 4.3e-8
	{TypeBF16, 4e-6, "blocks"},   // 2.8e-6
	{TypeQ8_0, 4e-5, "blocks"},   // 2.9e-5
	{TypeQ4_0, 9e-3, "blocks"},   // 7.4e-3
	{TypeQ4_1, 7e-3, "blocks"},   // 6.1e-3
	{TypeQ5_0, 2.2e-3, "blocks"}, // 1.8e-3
	{TypeQ5_1, 1.7e-3, "blocks"}, // 1.4e-3
	{TypeQ2_K, 0.1, ""},          // 8.7e-2
	{TypeQ3_K, 2.6e-2, ""},       // 2.3e-2
	{TypeQ4_K, 6e-3, "blocks"},   // 5.1e-3
	{TypeQ5_K, 1.5e-3, ""},       // 1.3e-3
	{TypeQ6_K, 3.6e-4, "values"}, // 3.1e-4
	{TypeQ8_K, 6e-5, ""},         // 4.9e-5
}

// TestQuantizeRoundTrip: quantize → dequantize stays within each type's
// expected error on N(0,1) and N(0,0.02) data, and requantizing the result
// gives back the same blocks or values where the format allows it.
func TestQuantizeRoundTrip(t *testing.T) {
	for _, sigma := range []float64{1, 0.02} {
		x := gaussian(1<<15, sigma, 1)
		for _, tc := range roundTripCases {
			q, y := roundTrip(t, tc.typ, x)
			if e := nmse.Of(y, x); e > tc.maxNMSE {
				t.Errorf("%s, sigma %g: NMSE %.3e, want ≤ %.1e", tc.typ, sigma, e, tc.maxNMSE)
			}
			q2, y2 := roundTrip(t, tc.typ, y)
			switch tc.idempotent {
			case "blocks":
				if !bytes.Equal(q, q2) {
					t.Errorf("%s, sigma %g: requantizing the dequantized values changed the blocks", tc.typ, sigma)
				}
			case "values":
				if e := nmse.Of(y2, y); e != 0 {
					t.Errorf("%s, sigma %g: requantizing the dequantized values changed them (NMSE %.3e)", tc.typ, sigma, e)
				}
			}
		}
	}
}

// TestQuantizeEdgeBlocks: all-zero blocks come back as zeros and constant
// or spiky blocks come back finite.
func TestQuantizeEdgeBlocks(t *testing.T) {
	inputs := map[string][]float32{
		"zeros":    make([]float32, QK_K),
		"constant": constant(QK_K, 0.75),
		"negative": constant(QK_K, -3),
		"spike":    append(make([]float32, QK_K-1), 1e4),
		"tiny":     constant(QK_K, 1e-20),
	}
	for _, tc := range roundTripCases {
		for name, x := range inputs {
			_, y := roundTrip(t, tc.typ, x)
			for i, v := range y {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					t.Fatalf("%s %s: value %d = %g", tc.typ, name, i, v)
				}
				if name == "zeros" && v != 0 {
					t.Fatalf("%s zeros: value %d = %g", tc.typ, i, v)
				}
			}
		}
	}
}

// TestQuantizeNonFinite: NaN and infinite inputs give some blocks (the
// values are unspecified, as in ggml) and never a fault.
func TestQuantizeNonFinite(t *testing.T) {
	x := gaussian(QK_K, 1, 5)
	x[3] = float32(math.NaN())
	x[40] = float32(math.Inf(1))
	x[200] = float32(math.Inf(-1))
	for _, tc := range roundTripCases {
		roundTrip(t, tc.typ, x)
	}
}

func constant(n int, v float32) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = v
	}
	return x
}

func TestCanQuantize(t *testing.T) {
	for _, tc := range []struct {
		typ                  Type
		quantize, dequantize bool
	}{
		{TypeF32, true, true},
		{TypeF16, true, true},
		{TypeBF16, true, true},
		{TypeQ4_0, true, true},
		{TypeQ4_K, true, true},
		{TypeQ6_K, true, true},
		{TypeQ8_K, true, true},
		{TypeQ8_1, false, false},
		{TypeIQ2_XXS, false, false},
		{TypeI32, false, false},
		{Type(200), false, false},
	} {
		if got := tc.typ.CanQuantize(); got != tc.quantize {
			t.Errorf("%s.CanQuantize() = %v", tc.typ, got)
		}
		if got := tc.typ.CanDequantize(); got != tc.dequantize {
			t.Errorf("%s.CanDequantize() = %v", tc.typ, got)
		}
	}
}

func TestQuantizeErrors(t *testing.T) {
	tests := []struct {
		name    string
		run     func() error
		mention string
	}{
		{"dequantize unsupported", func() error { return Dequantize(TypeIQ2_XXS, make([]byte, 66), make([]float32, 256)) }, "IQ2_XXS"},
		{"dequantize partial block", func() error { return Dequantize(TypeQ4_0, make([]byte, 18), make([]float32, 31)) }, "31 values"},
		{"dequantize short source", func() error { return Dequantize(TypeQ4_K, make([]byte, 143), make([]float32, 256)) }, "have 143"},
		{"dequantize long source", func() error { return Dequantize(TypeF16, make([]byte, 10), make([]float32, 4)) }, "have 10"},
		{"quantize unsupported", func() error { return Quantize(TypeQ8_1, make([]float32, 32), make([]byte, 36)) }, "Q8_1"},
		{"quantize partial block", func() error { return Quantize(TypeQ6_K, make([]float32, 300), make([]byte, 210)) }, "300 values"},
		{"quantize short destination", func() error { return Quantize(TypeQ8_0, make([]float32, 64), make([]byte, 34)) }, "have 34"},
	}
	for _, tc := range tests {
		err := tc.run()
		if err == nil || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.mention)
		}
	}
}
