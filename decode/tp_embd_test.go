package decode

import (
	"testing"

	"llmserve/gguf"
	"llmserve/kernels"
	"llmserve/model"
)

// TestWithZeroRow checks, for every matrix type, that the appended row
// looks up as exact zeros and the others as before, and that summing each
// rank's lookup of a token gives the token's row of the whole table, as
// the device all-reduce of the embedded rows does.
func TestWithZeroRow(t *testing.T) {
	const cols, vocab, ranks = 256, 6, 2
	for _, typ := range model.MatrixTypes {
		t.Run(typ.String(), func(t *testing.T) {
			src := make([]float32, cols*vocab)
			for i := range src {
				src[i] = float32(i%97)/50 - 1
			}
			rb, err := typ.RowBytes(cols)
			if err != nil {
				t.Fatal(err)
			}
			data := make([]byte, rb*vocab)
			if err := gguf.Quantize(typ, src, data); err != nil {
				t.Fatal(err)
			}
			whole := &model.Tensor{Name: "token_embd.weight", Type: typ, Dims: []int64{cols, vocab}, Data: data}
			wm, err := kernels.NewMatrix(typ, vocab, cols, data)
			if err != nil {
				t.Fatal(err)
			}
			sum, row, want := make([]float32, cols), make([]float32, cols), make([]float32, cols)
			shards := make([]kernels.Matrix, ranks)
			for r := range ranks {
				lo, hi := r*vocab/ranks, (r+1)*vocab/ranks
				cut, err := model.SliceTensor(whole, model.TensorSplit{Axis: model.ByRows, Spans: []model.Span{{Lo: lo, Hi: hi}}})
				if err != nil {
					t.Fatal(err)
				}
				s := &model.Model{}
				s.Tensors[model.TokEmbd], s.Tensors[model.Output] = cut, cut
				if err := withZeroRow(s); err != nil {
					t.Fatal(err)
				}
				if !s.Tied() || s.Tensors[model.TokEmbd].Dims[1] != int64(hi-lo+1) {
					t.Fatalf("rank %d: tied %v, %v rows", r, s.Tied(), s.Tensors[model.TokEmbd].Dims)
				}
				z := s.Tensors[model.TokEmbd]
				if shards[r], err = kernels.NewMatrix(typ, int(z.Dims[1]), cols, z.Data); err != nil {
					t.Fatal(err)
				}
				if err := kernels.Row(shards[r], hi-lo, row); err != nil {
					t.Fatal(err)
				}
				for i, v := range row {
					if v != 0 {
						t.Fatalf("rank %d: zero row value %d is %g", r, i, v)
					}
				}
			}
			for tok := range int32(vocab) {
				clear(sum)
				for r := range ranks {
					lo, hi := r*vocab/ranks, (r+1)*vocab/ranks
					if err := kernels.Row(shards[r], int(shardRow(tok, lo, hi)), row); err != nil {
						t.Fatal(err)
					}
					kernels.Add(sum, row)
				}
				if err := kernels.Row(wm, int(tok), want); err != nil {
					t.Fatal(err)
				}
				for i := range want {
					if sum[i] != want[i] {
						t.Fatalf("token %d value %d: ranks sum to %g, the table holds %g", tok, i, sum[i], want[i])
					}
				}
			}
		})
	}
}
