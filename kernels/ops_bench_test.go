package kernels

import (
	"math/rand/v2"
	"testing"
)

// Element-wise ops at the sizes of a Llama-3.2-1B step: FFN 8192, a
// context of 1024, embedding 2048, 32 heads of 64.

func BenchmarkOpSwiGLU(b *testing.B) {
	g, u := randVec(rand.New(rand.NewPCG(1, 1)), 8192), randVec(rand.New(rand.NewPCG(1, 2)), 8192)
	d := make([]float32, 8192)
	for i := 0; i < b.N; i++ {
		SwiGLU(d, g, u)
	}
}
func BenchmarkOpSoftmax(b *testing.B) {
	g := randVec(rand.New(rand.NewPCG(1, 1)), 1024)
	for i := 0; i < b.N; i++ {
		Softmax(g)
	}
}
func BenchmarkOpRMS(b *testing.B) {
	g, u := randVec(rand.New(rand.NewPCG(1, 1)), 2048), randVec(rand.New(rand.NewPCG(1, 2)), 2048)
	for i := 0; i < b.N; i++ {
		RMSNorm(g, g, u, 1e-5)
	}
}
func BenchmarkOpRoPE(b *testing.B) {
	g := randVec(rand.New(rand.NewPCG(1, 1)), 2048)
	for i := 0; i < b.N; i++ {
		RoPE(g, 32, 64, 64, 100, 500000, true, nil)
	}
}

// BenchmarkOpAttention is one head's attention over 4096 cached positions
// (head dim 64, KV rows 512 floats apart): per position calls (Dot, Axpy)
// against the batched Dots and Axpys.
func BenchmarkOpAttention(b *testing.B) {
	const hd, n, stride = 64, 4096, 512
	q := randVec(rand.New(rand.NewPCG(1, 1)), hd)
	kv := randVec(rand.New(rand.NewPCG(1, 2)), n*stride)
	sc := make([]float32, n)
	out := make([]float32, hd)
	b.Run("per-position", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			for p := 0; p < n; p++ {
				sc[p] = Dot(q, kv[p*stride:p*stride+hd])
			}
			for p := 0; p < n; p++ {
				Axpy(out, sc[p], kv[p*stride:p*stride+hd])
			}
		}
	})
	b.Run("batched", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			Dots(sc, q, kv, stride)
			Axpys(out, sc, kv, stride)
		}
	})
}
