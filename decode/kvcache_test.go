package decode

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"llmserve/internal/nmse"
	"llmserve/model"
)

// TestKVCellsAddressing stores a distinct row at every position of
// sequences of 1..3 blocks and a partial one, through a scattered block
// table, and reads every position back run by run, for each cell type.
func TestKVCellsAddressing(t *testing.T) {
	const dim, bs, blocks = 64, 4, 12
	table := []int32{7, 2, 11, 0}
	row := func(pos int) []float32 {
		x := make([]float32, dim)
		for i := range x {
			x[i] = float32(pos+1) + float32(i)/64
		}
		return x
	}
	for _, typ := range []KVType{KVF32, KVF16, KVQ8_0} {
		for _, n := range []int{1, 3, 4, 5, 8, 9, 12, 13, 15} {
			t.Run(fmt.Sprintf("%s/%d", typ, n), func(t *testing.T) {
				c, err := newKVCells(typ, dim, blocks*bs)
				if err != nil {
					t.Fatal(err)
				}
				if err := checkTable(table, bs, blocks, n-1); err != nil {
					t.Fatal(err)
				}
				for p := 0; p < n; p++ {
					c.store(cellOf(table, bs, p), row(p))
				}
				scratch := make([]float32, bs*dim)
				for p := 0; p < n; {
					r := blockRun(bs, p, n-p)
					if r < 1 || (p+r)%bs != 0 && p+r != n {
						t.Fatalf("run of %d from %d in blocks of %d for %d positions", r, p, bs, n)
					}
					const lo, hi = 8, 24 // a head in the middle of the row
					got, stride := scratch, hi-lo
					c.widen(cellOf(table, bs, p), r, lo, hi, scratch)
					if typ == KVF32 && p%2 == 0 { // also read in place
						got, stride = c.rows(cellOf(table, bs, p), r, lo, hi), dim
					}
					for j := 0; j < r; j++ {
						want := row(p + j)[lo:hi]
						for i, w := range want {
							g := got[j*stride+i]
							if math.Abs(float64(g-w)) > kvTolerance(typ)*math.Abs(float64(w)) {
								t.Fatalf("position %d value %d: %g, want %g", p+j, lo+i, g, w)
							}
						}
					}
					p += r
				}
			})
		}
	}
}

// kvTolerance is the relative error one cell value may have: none in f32,
// half an f16 ulp, and half a q8_0 step of a block's largest value (the
// rows of the test span a factor of at most 2 within a block).
func kvTolerance(t KVType) float64 {
	switch t {
	case KVF16:
		return 1.0 / 2048
	case KVQ8_0:
		return 2.0 / 127
	}
	return 0
}

func TestCheckTable(t *testing.T) {
	tests := []struct {
		name  string
		table []int32
		pos   int
		ok    bool
	}{
		{"first position", []int32{3}, 0, true},
		{"last of the block", []int32{3}, 3, true},
		{"past the table", []int32{3}, 4, false},
		{"block outside the pool", []int32{3, 8}, 5, false},
		{"negative block", []int32{-1}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := checkTable(tt.table, 4, 8, tt.pos); (err == nil) != tt.ok {
				t.Errorf("err = %v, want ok = %v", err, tt.ok)
			}
		})
	}
}

// pagedForward prefills tokens[from:] of a sequence whose block table is
// table (in slot 0 of a batch that carries it) and returns the logits of
// every position from from.
func pagedForward(t *testing.T, e *CPUEngine, table []int32, tokens []int32, from int) []float32 {
	t.Helper()
	b := Batch{Blocks: make([][]int32, e.MaxSeqs())}
	b.Blocks[0] = table
	for p := from; p < len(tokens); p++ {
		b.Add(tokens[p], int32(p), 0, true)
	}
	out := make([]float32, (len(tokens)-from)*e.VocabSize())
	if err := e.Forward(&b, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// storiesTokens is a prompt of n tokens of stories260K's vocabulary.
func storiesTokens(n int) []int32 {
	p := []int32{1}
	for len(p) < n {
		p = append(p, int32(259+len(p)*37%250))
	}
	return p
}

// TestCPUPagedMatchesFixed checks the addressing of the engine: a
// sequence of 1..3 blocks and a partial one, written and read through a
// scattered block table, gives bit for bit the logits of the same
// sequence in a slot's own fixed blocks.
func TestCPUPagedMatchesFixed(t *testing.T) {
	const bs = 16
	for _, typ := range []KVType{KVF32, KVF16} {
		e := openEngine(t, "models/stories260K.gguf", CPUOptions{Context: 64, MaxSeqs: 2, Threads: 2, BlockSize: bs, CacheTypeK: typ, CacheTypeV: typ})
		// The fixed tables of 2 slots use blocks 0..7; run the paged
		// sequence over slot 1's blocks in reverse order.
		scattered := []int32{7, 5, 6, 4}
		for _, n := range []int{1, 15, 16, 17, 32, 33, 48, 53} {
			t.Run(fmt.Sprintf("%s/%d", typ, n), func(t *testing.T) {
				tokens := storiesTokens(n)
				want := forwardAll(t, e, tokens, 0)
				got := pagedForward(t, e, scattered, tokens, 0)
				if !slices.Equal(got, want) {
					t.Errorf("paged logits differ from the fixed slot's (NMSE %.3g)", nmse.Of(got, want))
				}
			})
		}
	}
}

// TestCPUPrefixReuseBitIdentical checks that a prompt whose first blocks
// come from another sequence's cache (as the prefix cache hands them out)
// gives the logits of a cold prefill bit for bit, on stories260K and
// golden models, in every cache type.
func TestCPUPrefixReuseBitIdentical(t *testing.T) {
	models := []struct {
		path   string
		bs     int
		tokens []int32
	}{
		{"models/stories260K.gguf", 16, storiesTokens(45)},
		{"golden/tiny-llama-F32.gguf", 4, goldenTokens},
		{"golden/tiny-llama-Q4_K_M.gguf", 4, goldenTokens},
		{"golden/tiny-qwen2-Q8_0.gguf", 4, goldenTokens},
		{"golden-arch/tiny-gemma2-F32.gguf", 4, goldenTokens}, // sliding window, soft-capping
		{"golden-arch/tiny-phi3-F32.gguf", 4, goldenTokens},
	}
	for _, m := range models {
		for _, typ := range []KVType{KVF32, KVF16, KVQ8_0} {
			t.Run(fmt.Sprintf("%s/%s", m.path, typ), func(t *testing.T) {
				mod := loadModel(t, m.path)
				if _, err := typ.rowBytes(mod.KVHeads * mod.HeadDim); err != nil {
					t.Skipf("the model cannot have this cache: %v", err)
				}
				e, err := NewCPUEngine(mod, CPUOptions{Context: 64, MaxSeqs: 2, Threads: 2, BlockSize: m.bs, CacheTypeK: typ, CacheTypeV: typ})
				if err != nil {
					t.Fatal(err)
				}
				defer e.Close()
				n := len(m.tokens)
				blocks := e.KVLayout().BlocksFor(n)
				cold := make([]int32, blocks)
				for i := range cold {
					cold[i] = int32(i)
				}
				want := pagedForward(t, e, cold, m.tokens, 0)
				vocab := e.VocabSize()
				for shared := 1; shared < blocks; shared++ {
					warm := slices.Clone(cold[:shared])
					for i := shared; i < blocks; i++ {
						warm = append(warm, int32(blocks+i))
					}
					from := shared * m.bs
					got := pagedForward(t, e, warm, m.tokens, from)
					if !slices.Equal(got, want[from*vocab:]) {
						t.Errorf("%d shared blocks: logits differ from the cold prefill (NMSE %.3g)", shared, nmse.Of(got, want[from*vocab:]))
					}
				}
			})
		}
	}
}

// TestCPUKVLayout sizes the CPU engine's pool: types and their bytes per
// token, the default of MaxSeqs full contexts, a memory budget rounded
// down to whole blocks and refused below one context, and q8_0 refused
// for rows that are not whole q8_0 blocks.
func TestCPUKVLayout(t *testing.T) {
	m := &model.Model{Config: model.Config{Embd: 64, Heads: 4, KVHeads: 2, HeadDim: 32, FFN: 128, Vocab: 100}, Layers: make([]model.Layer, 3)}
	narrow := &model.Model{Config: model.Config{Embd: 64, Heads: 4, KVHeads: 2, HeadDim: 8, FFN: 128, Vocab: 100}, Layers: make([]model.Layer, 3)}
	tests := []struct {
		name          string
		m             *model.Model
		opts          CPUOptions
		blocks        int
		bytesPerToken int64
		ok            bool
	}{
		{"default f16", m, CPUOptions{Context: 100, MaxSeqs: 3}, 3 * 4, 3 * 2 * 64 * 2, true},
		{"f32 blocks of 16", m, CPUOptions{Context: 100, MaxSeqs: 2, BlockSize: 16, CacheTypeK: KVF32, CacheTypeV: KVF32}, 2 * 7, 3 * 2 * 64 * 4, true},
		{"q8_0 keys, f16 values", m, CPUOptions{Context: 64, MaxSeqs: 1, CacheTypeK: KVQ8_0}, 2, 3 * (68 + 128), true},
		{"budget of 5.5 blocks", m, CPUOptions{Context: 64, MaxSeqs: 8, KVMemory: 768*32*5 + 400}, 5, 768, true},
		{"budget below one context", m, CPUOptions{Context: 200, MaxSeqs: 8, KVMemory: 768 * 32 * 6}, 0, 0, false},
		{"q8_0 with rows of 16", narrow, CPUOptions{Context: 64, MaxSeqs: 1, CacheTypeV: KVQ8_0}, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			l, err := cpuKVLayout(tt.m, &opts)
			if (err == nil) != tt.ok {
				t.Fatalf("err = %v, want ok = %v", err, tt.ok)
			}
			if tt.ok && (l.Blocks != tt.blocks || l.BytesPerToken() != tt.bytesPerToken) {
				t.Errorf("%d blocks of %d bytes a token, want %d of %d", l.Blocks, l.BytesPerToken(), tt.blocks, tt.bytesPerToken)
			}
		})
	}
}
