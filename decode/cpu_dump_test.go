package decode

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestTensorDump checks that a dumped forward step names every step of
// every block once per token, llama.cpp-style, and that its last
// intermediate is the logits Forward returns.
func TestTensorDump(t *testing.T) {
	for _, rel := range []string{"golden/tiny-qwen2-F32.gguf", "golden-arch/tiny-gemma2-F32.gguf", "golden-arch/tiny-mixtral-F32.gguf"} {
		t.Run(filepath.Base(rel), func(t *testing.T) {
			e := openEngine(t, rel, CPUOptions{Context: 16})
			seen := map[string][]float32{}
			e.SetTensorDump(func(name string, pos, seq int32, values []float32) {
				key := fmt.Sprintf("%s@%d", name, pos)
				if _, dup := seen[key]; dup {
					t.Errorf("%s dumped twice", key)
				}
				seen[key] = slices.Clone(values)
			})
			tokens := goldenTokens[:4]
			logits := forwardAll(t, e, tokens, 0)
			g := &e.m.Graph
			want := 1 + len(g.Input) + len(g.Output)
			for _, b := range g.Blocks {
				want += len(b)
			}
			if len(seen) != want*len(tokens) {
				t.Errorf("%d intermediates dumped, want %d steps × %d tokens", len(seen), want, len(tokens))
			}
			for _, name := range []string{"inp_embd", "blk.0.attn_norm", "blk.0.kqv_out", "blk.0.l_out", "result_norm"} {
				if seen[name+"@0"] == nil {
					t.Errorf("no %s for position 0", name)
				}
			}
			last := g.Output[len(g.Output)-1].Name
			V := e.VocabSize()
			for i := range tokens {
				if got := seen[fmt.Sprintf("%s@%d", last, i)]; !slices.Equal(got, logits[i*V:(i+1)*V]) {
					t.Errorf("position %d: dumped %s differs from the logits", i, last)
				}
			}
		})
	}
}

// TestDirDump writes two intermediates and reads back the files and index.
func TestDirDump(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dump")
	d, err := NewDirDump(dir)
	if err != nil {
		t.Fatal(err)
	}
	d.Dump("blk.3.attn_norm", 7, 0, []float32{1, -2.5})
	d.Dump("result_output", 7, 0, []float32{3})
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	idx, err := os.ReadFile(filepath.Join(dir, "index.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	wantIdx := "name\tpos\tseq\tvalues\tfile\nblk.3.attn_norm\t7\t0\t2\tblk.3.attn_norm.p7.s0.f32\nresult_output\t7\t0\t1\tresult_output.p7.s0.f32\n"
	if string(idx) != wantIdx {
		t.Errorf("index.tsv\n got %q\nwant %q", idx, wantIdx)
	}
	got := readF32s(t, filepath.Join(dir, "blk.3.attn_norm.p7.s0.f32"))
	if !slices.Equal(got, []float32{1, -2.5}) {
		t.Errorf("blk.3.attn_norm values %v, want [1 -2.5]", got)
	}
}
