package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"llmserve/gguf"
)

// benchMatrix builds a rows×cols matrix by repeating 16 random rows, so the
// weights are plausible and the memory traffic is that of the full matrix.
// With huge, the matrix lives in AllocHuge memory.
func benchMatrix(b *testing.B, typ gguf.Type, rows, cols int, huge bool) Matrix {
	rng := rand.New(rand.NewPCG(uint64(typ), uint64(rows)))
	seed := randMatrix(&testing.T{}, rng, typ, 16, cols)
	rb := len(seed.Data) / 16
	data := make([]byte, rows*rb)
	if huge {
		var free func() error
		var err error
		if data, free, err = AllocHuge(rows * rb); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = free() })
	}
	for off := 0; off < len(data); off += len(seed.Data) {
		copy(data[off:], seed.Data)
	}
	m, err := NewMatrix(typ, rows, cols, data)
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkMatMul times one decode matrix-vector product (n=1) on the three
// matrix shapes of a Llama-3.2-1B layer and its output, and a prefill of 32
// rows, reporting weight bytes streamed per second. With GOMAXPROCS threads.
func BenchmarkMatMul(b *testing.B) {
	p := NewPool(runtime.GOMAXPROCS(0))
	defer p.Close()
	shapes := [][2]int{{2048, 8192}, {8192, 2048}, {128256, 2048}}
	for _, typ := range matTypes {
		for _, sh := range shapes {
			rows, cols := sh[0], sh[1]
			var w Matrix
			for _, ks := range kernelSets {
				for _, n := range []int{1, 32} {
					if n > 1 && rows > 8192 {
						continue
					}
					b.Run(fmt.Sprintf("%s/%dx%d/n=%d/%s", typ, rows, cols, n, ks.name), func(b *testing.B) {
						if w.Data == nil {
							w = benchMatrix(b, typ, rows, cols, false)
						}
						x := randVec(rand.New(rand.NewPCG(1, 1)), n*cols)
						y := make([]float32, n*rows)
						b.SetBytes(int64(len(w.Data)))
						b.ResetTimer()
						for i := 0; i < b.N; i++ {
							if err := matMul(ks, p, w, x, n, y); err != nil {
								b.Fatal(err)
							}
						}
						ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
						b.ReportMetric(ns/1e6, "ms/op")
						b.ReportMetric(float64(len(w.Data))/ns, "GB/s")
					})
				}
			}
		}
	}
}

// BenchmarkRowDot times the row kernels alone, single-threaded, on 256 rows
// of 2048 values that stay in the L2 cache: the compute ceiling of each
// kernel, in weight bytes per second.
func BenchmarkRowDot(b *testing.B) {
	const rows, cols = 256, 2048
	for _, typ := range matTypes {
		w := benchMatrix(b, typ, rows, cols, false)
		rb := len(w.Data) / rows
		x := randVec(rand.New(rand.NewPCG(1, 1)), cols)
		for _, ks := range kernelSets {
			k := ks.types[typ]
			var buf actBuf
			a := &buf.prepare(k.act, x, 1, cols)[0]
			a.quantize(k.act)
			b.Run(fmt.Sprintf("%s/%s", typ, ks.name), func(b *testing.B) {
				b.SetBytes(int64(len(w.Data)))
				var sink float32
				for i := 0; i < b.N; i++ {
					for r := 0; r < rows; r++ {
						sink += k.dot(w.Data[r*rb:(r+1)*rb], a)
					}
				}
				if sink == 1.5 {
					b.Log(sink)
				}
			})
		}
	}
}

// BenchmarkToken runs the matrix products of one step of a Llama-3.2-1B-
// shaped model (16 layers, embedding 2048, FFN 8192, 8 KV heads of 64,
// vocabulary 128256) with every layer in its own memory, as in a real
// model. The Q4_K_M mix follows llama.cpp: attn_v and ffn_down in Q6_K on
// half the layers, output in Q6_K, the rest Q4_K. Variants: weights on Go
// heap pages (heap) or in AllocHuge memory (huge); a decode step (n=1,
// bound by memory bandwidth) or a prefill of 32 tokens (n=32, bound by
// compute; ms/token is per token of the 32).
func BenchmarkToken(b *testing.B) {
	const layers, embd, ffn, kv, vocab = 16, 2048, 8192, 512, 128256
	mixes := []struct {
		name        string
		base, heavy gguf.Type
		output      gguf.Type
	}{
		{"Q4_K_M", gguf.TypeQ4_K, gguf.TypeQ6_K, gguf.TypeQ6_K},
		{"Q8_0", gguf.TypeQ8_0, gguf.TypeQ8_0, gguf.TypeQ8_0},
	}
	variants := []struct {
		mem  string
		huge bool
		n    int
	}{{"heap", false, 1}, {"huge", true, 1}, {"huge", true, 32}}
	p := NewPool(runtime.GOMAXPROCS(0))
	defer p.Close()
	for _, mix := range mixes {
		for _, v := range variants {
			b.Run(fmt.Sprintf("%s/%s/n=%d", mix.name, v.mem, v.n), func(b *testing.B) {
				type mm struct {
					w    Matrix
					x, y []float32
				}
				var ops []mm
				var bytes int64
				add := func(typ gguf.Type, rows, cols int) {
					w := benchMatrix(b, typ, rows, cols, v.huge)
					bytes += int64(len(w.Data))
					ops = append(ops, mm{w, randVec(rand.New(rand.NewPCG(2, 2)), v.n*cols), make([]float32, v.n*rows)})
				}
				for l := 0; l < layers; l++ {
					heavy := mix.base
					if l%2 == 0 {
						heavy = mix.heavy
					}
					add(mix.base, embd, embd) // attn_q
					add(mix.base, kv, embd)   // attn_k
					add(heavy, kv, embd)      // attn_v
					add(mix.base, embd, embd) // attn_output
					add(mix.base, ffn, embd)  // ffn_gate
					add(mix.base, ffn, embd)  // ffn_up
					add(heavy, embd, ffn)     // ffn_down
				}
				add(mix.output, vocab, embd)
				b.SetBytes(bytes)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					for _, o := range ops {
						if err := MatMul(p, o.w, o.x, v.n, o.y); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*v.n)/1e6, "ms/token")
			})
		}
	}
}

// BenchmarkRowDot4 is BenchmarkRowDot for the four-row kernels: the same
// 256 weight rows against four activation rows, by four single-row calls
// (x1) and by one four-row call (x4).
func BenchmarkRowDot4(b *testing.B) {
	const rows, cols = 256, 2048
	for _, typ := range matTypes {
		k := bestKernels().types[typ]
		if k.dot4 == nil {
			continue
		}
		w := benchMatrix(b, typ, rows, cols, false)
		rb := len(w.Data) / rows
		x := randVec(rand.New(rand.NewPCG(1, 1)), 4*cols)
		var buf actBuf
		a := buf.prepare(k.act, x, 4, cols)
		for i := range a {
			a[i].quantize(k.act)
		}
		b.Run(typ.String()+"/x1", func(b *testing.B) {
			b.SetBytes(4 * int64(len(w.Data)))
			var sink float32
			for i := 0; i < b.N; i++ {
				for r := 0; r < rows; r++ {
					for j := range a {
						sink += k.dot(w.Data[r*rb:(r+1)*rb], &a[j])
					}
				}
			}
			if sink == 1.5 {
				b.Log(sink)
			}
		})
		b.Run(typ.String()+"/x4", func(b *testing.B) {
			b.SetBytes(4 * int64(len(w.Data)))
			var sink float32
			for i := 0; i < b.N; i++ {
				for r := 0; r < rows; r++ {
					sink += k.dot4(w.Data[r*rb:(r+1)*rb], a)[0]
				}
			}
			if sink == 1.5 {
				b.Log(sink)
			}
		})
	}
}
