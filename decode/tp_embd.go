package decode

import (
	"fmt"

	"llmserve/model"
)

// withZeroRow appends an all-zero row to a shard's token_embd, for an
// engine that looks tokens up on the device: every type's zero bytes decode
// to zeros, so a token another rank holds looks up that row (index
// Vocab of the shard) and adds nothing to the all-reduce of the embedded
// rows. A tied output shares the new tensor; its product must read the
// first Vocab rows only.
func withZeroRow(s *model.Model) error {
	t := s.Tensors[model.TokEmbd]
	if t == nil || len(t.Dims) != 2 {
		return fmt.Errorf("decode: shard without a 2-D token_embd")
	}
	rb, err := t.Type.RowBytes(t.Dims[0])
	if err != nil {
		return fmt.Errorf("decode: %s: %w", t.Name, err)
	}
	z := &model.Tensor{Name: t.Name, Type: t.Type, Dims: []int64{t.Dims[0], t.Dims[1] + 1}}
	z.Data = append(append(make([]byte, 0, int64(len(t.Data))+rb), t.Data...), make([]byte, rb)...)
	if s.Tied() {
		s.Tensors[model.Output] = z
	}
	s.Tensors[model.TokEmbd] = z
	return nil
}

// shardRow is the row of a rank's token_embd (holding the vocabulary span
// [lo, hi) and, after withZeroRow, a zero row) that token tok looks up.
func shardRow(tok int32, lo, hi int) int32 {
	if int(tok) < lo || int(tok) >= hi {
		return int32(hi - lo)
	}
	return tok - int32(lo)
}
