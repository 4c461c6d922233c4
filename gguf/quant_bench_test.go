package gguf

import "testing"

// The benchmarks report throughput in bytes of float32 values produced
// (dequantize) or consumed (quantize), over 1 Mi values.

func BenchmarkDequantize(b *testing.B) {
	x := gaussian(1<<20, 1, 3)
	for _, tc := range benchTypes() {
		n, _ := tc.RowBytes(int64(len(x)))
		q := make([]byte, n)
		if err := Quantize(tc, x, q); err != nil {
			b.Fatal(err)
		}
		y := make([]float32, len(x))
		b.Run(tc.String(), func(b *testing.B) {
			b.SetBytes(int64(4 * len(y)))
			for b.Loop() {
				if err := Dequantize(tc, q, y); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkQuantize(b *testing.B) {
	x := gaussian(1<<20, 1, 3)
	for _, tc := range benchTypes() {
		n, _ := tc.RowBytes(int64(len(x)))
		q := make([]byte, n)
		b.Run(tc.String(), func(b *testing.B) {
			b.SetBytes(int64(4 * len(x)))
			for b.Loop() {
				if err := Quantize(tc, x, q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func benchTypes() []Type {
	return []Type{TypeF32, TypeF16, TypeBF16, TypeQ4_0, TypeQ4_1, TypeQ5_0, TypeQ5_1, TypeQ8_0,
		TypeQ2_K, TypeQ3_K, TypeQ4_K, TypeQ5_K, TypeQ6_K, TypeQ8_K}
}
