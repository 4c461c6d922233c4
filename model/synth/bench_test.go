package synth

import (
	"testing"

	"llmserve/gguf"
)

// BenchmarkChunk measures one worker's cost per chunk: drawing the random
// values of a 4096-wide matrix chunk and encoding them in each type. The
// ns/value metric times the parameter count, divided by the cores,
// estimates how long a model takes.
func BenchmarkChunk(b *testing.B) {
	c, _ := Shape("llama", "8b")
	spec := tensorSpec{name: "blk.0.ffn_up.weight", dims: []int64{4096, 14336}, init: initMatrix}
	rows := int64(chunkValues / 4096)
	for _, typ := range []gguf.Type{gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16, gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K} {
		b.Run(typ.String(), func(b *testing.B) {
			filler := newRowFiller()
			values := make([]float32, rows*4096)
			size, _ := typ.RowBytes(int64(len(values)))
			out := make([]byte, size)
			for i := 0; b.Loop(); i++ {
				filler.fill(&spec, &c, 1, int64(i)*rows, values)
				if err := gguf.Quantize(typ, values, out); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(values)), "ns/value")
		})
	}
}
