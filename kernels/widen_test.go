package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"llmserve/gguf"
)

// TestWidenF16 checks the widening of every length from 0 to 40 (the
// vector loop and the scalar tail) and of special values against
// gguf.FP16ToFP32, bit for bit but for NaN payloads (F16C quiets a
// signaling NaN).
func TestWidenF16(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	specials := []uint16{0x0000, 0x8000, 0x0001, 0x03ff, 0x7bff, 0x7c00, 0xfc00, 0x7e00, 0x3c00}
	for n := 0; n <= 40; n++ {
		src := make([]uint16, n)
		for i := range src {
			src[i] = uint16(rng.Uint32())
			if i < len(specials) && n%3 == 0 {
				src[i] = specials[i]
			}
		}
		dst := make([]float32, n)
		WidenF16(dst, src)
		for i, h := range src {
			want := gguf.FP16ToFP32(h)
			if isNaN(want) && isNaN(dst[i]) {
				continue
			}
			if math.Float32bits(dst[i]) != math.Float32bits(want) {
				t.Fatalf("n %d, value %d (%#04x): %g, want %g", n, i, h, dst[i], want)
			}
		}
	}
}

// TestWidenQ8_0 checks 1 to 5 blocks against gguf.Dequantize, bit for bit.
func TestWidenQ8_0(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for nb := 1; nb <= 5; nb++ {
		x := make([]float32, 32*nb)
		for i := range x {
			x[i] = float32(rng.NormFloat64()) * float32(i%7+1)
		}
		q := make([]byte, 34*nb)
		if err := gguf.Quantize(gguf.TypeQ8_0, x, q); err != nil {
			t.Fatal(err)
		}
		want := make([]float32, len(x))
		if err := gguf.Dequantize(gguf.TypeQ8_0, q, want); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, len(x))
		WidenQ8_0(got, q)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%d blocks, value %d: %g, want %g", nb, i, got[i], want[i])
			}
		}
	}
}

func isNaN(f float32) bool { return f != f }
