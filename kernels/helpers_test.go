package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"llmserve/gguf"
)

// nmse is Σ(got-want)²/Σwant².
func nmse(got []float32, want []float64) float64 {
	var num, den float64
	for i, w := range want {
		d := float64(got[i]) - w
		num += d * d
		den += w * w
	}
	if den == 0 {
		return num
	}
	return num / den
}

func randVec(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// randHalf returns the bits of a random half of magnitude 2⁻⁸..2⁻¹ and
// random sign: a plausible block scale.
func randHalf(rng *rand.Rand) uint16 {
	exp := uint16(7 + rng.IntN(8))
	return uint16(rng.IntN(2))<<15 | exp<<10 | uint16(rng.IntN(1024))
}

func putHalf(b []byte, h uint16) { b[0], b[1] = byte(h), byte(h>>8) }

// halfFields lists, per block type, the offsets of its f16 scale fields.
var halfFields = map[gguf.Type][]int{
	gguf.TypeQ4_0: {0},
	gguf.TypeQ4_1: {0, 2},
	gguf.TypeQ5_0: {0},
	gguf.TypeQ5_1: {0, 2},
	gguf.TypeQ8_0: {0},
	gguf.TypeQ2_K: {80, 82},
	gguf.TypeQ3_K: {108},
	gguf.TypeQ4_K: {0, 2},
	gguf.TypeQ5_K: {0, 2},
	gguf.TypeQ6_K: {208},
}

// randMatrix returns a rows×cols matrix of type t with random contents: the
// quantized values and packed scales are random bytes, the f16 scales are
// random finite values, float types hold normal random values.
func randMatrix(t *testing.T, rng *rand.Rand, typ gguf.Type, rows, cols int) Matrix {
	t.Helper()
	rb, err := typ.RowBytes(int64(cols))
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, rows*int(rb))
	switch typ {
	case gguf.TypeF32:
		for i := 0; i < rows*cols; i++ {
			b := math.Float32bits(float32(rng.NormFloat64()))
			data[4*i], data[4*i+1], data[4*i+2], data[4*i+3] = byte(b), byte(b>>8), byte(b>>16), byte(b>>24)
		}
	case gguf.TypeF16:
		for i := 0; i < rows*cols; i++ {
			putHalf(data[2*i:], randHalf(rng)+uint16(8<<10)) // magnitude 2⁰..2⁷
		}
	case gguf.TypeBF16:
		for i := 0; i < rows*cols; i++ {
			putHalf(data[2*i:], uint16(math.Float32bits(float32(rng.NormFloat64()))>>16))
		}
	default:
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		bs, ts := typ.BlockSize(), typ.TypeSize()
		for b := 0; b < rows*cols/bs; b++ {
			for _, off := range halfFields[typ] {
				putHalf(data[b*ts+off:], randHalf(rng))
			}
		}
	}
	m, err := NewMatrix(typ, rows, cols, data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// refDequant expands a whole matrix to float64 through the gguf package's
// reference dequantizer.
func refDequant(t *testing.T, m Matrix) []float64 {
	t.Helper()
	f := make([]float32, m.Rows*m.Cols)
	if err := gguf.Dequantize(m.Type, m.Data, f); err != nil {
		t.Fatalf("reference dequantization of %s: %v", m.Type, err)
	}
	out := make([]float64, len(f))
	for i, v := range f {
		out[i] = float64(v)
	}
	return out
}

// refMatMul is the float64 product of a dequantized matrix with n rows of x.
func refMatMul(w []float64, rows, cols int, x []float64, n int) []float64 {
	y := make([]float64, n*rows)
	for i := 0; i < n; i++ {
		for r := 0; r < rows; r++ {
			var s float64
			for c := 0; c < cols; c++ {
				s += w[r*cols+c] * x[i*cols+c]
			}
			y[i*rows+r] = s
		}
	}
	return y
}

func to64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, f := range v {
		out[i] = float64(f)
	}
	return out
}
