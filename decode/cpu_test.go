package decode

import (
	"strings"
	"testing"

	"llmserve/internal/nmse"
	"llmserve/model"
)

// TestBatchedEqualsAlone runs three sequences with different prompt lengths
// in one batch, then decode steps for all of them together, and checks each
// sequence's logits against the same sequence run alone.
func TestBatchedEqualsAlone(t *testing.T) {
	const model = "golden/tiny-qwen2-Q8_0.gguf"
	prompts := [][]int32{goldenTokens[:5], goldenTokens[3:14], goldenTokens[7:9]}
	alone := make([][]float32, len(prompts))
	for s, p := range prompts {
		e := openEngine(t, model, CPUOptions{Context: 32})
		alone[s] = forwardAll(t, e, p, 0)
	}
	e := openEngine(t, model, CPUOptions{Context: 32, MaxSeqs: 3, MaxBatch: 4})
	var b Batch
	for s, p := range prompts {
		for i, tok := range p {
			b.Add(tok, int32(i), int32(s), true)
		}
	}
	V := e.VocabSize()
	out := make([]float32, b.Len()*V)
	if err := e.Forward(&b, out); err != nil {
		t.Fatal(err)
	}
	row := 0
	for s, p := range prompts {
		for i := range p {
			if err := nmse.Of(out[row*V:(row+1)*V], alone[s][i*V:(i+1)*V]); err > 1e-10 {
				t.Errorf("sequence %d token %d: NMSE %.3g between batched and alone", s, i, err)
			}
			row++
		}
	}
}

func TestForwardRejectsBadInput(t *testing.T) {
	e := openEngine(t, "golden/tiny-llama-F32.gguf", CPUOptions{Context: 8, MaxSeqs: 2})
	out := make([]float32, e.VocabSize())
	cases := []struct {
		name          string
		tok, pos, seq int32
		want          string
	}{
		{"token", 288, 0, 0, "vocabulary"},
		{"negative token", -1, 0, 0, "vocabulary"},
		{"position", 1, 8, 0, "context"},
		{"sequence", 1, 0, 2, "slots"},
	}
	for _, c := range cases {
		var b Batch
		b.Add(c.tok, c.pos, c.seq, true)
		if err := e.Forward(&b, out); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one mentioning %q", c.name, err, c.want)
		}
	}
	var b Batch
	b.Add(1, 0, 0, true)
	b.Add(2, 1, 0, true)
	if err := e.Forward(&b, out); err == nil {
		t.Error("a logits buffer for one row accepted two rows")
	}
}

func TestLoadProgress(t *testing.T) {
	var calls int
	var last, total int64
	e := openEngine(t, "golden/tiny-llama-Q4_K_M.gguf", CPUOptions{Context: 8, Progress: func(done, all int64) {
		if done < last || done > all {
			t.Errorf("progress %d of %d after %d", done, all, last)
		}
		calls, last, total = calls+1, done, all
	}})
	var want int64
	e.m.EachTensor(func(t *model.Tensor) { want += int64(len(t.Data)) })
	if calls == 0 || last != total || total != want {
		t.Errorf("%d progress calls ending at %d of %d; want the end at %d bytes", calls, last, total, want)
	}
}
