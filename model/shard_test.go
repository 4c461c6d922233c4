package model

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"llmserve/gguf"
)

func tpConfig(heads, kv, ffn int) Config {
	a, _ := LookupArch("llama")
	return Config{Arch: a, Embd: 64, Layers: 1, Heads: heads, KVHeads: kv, HeadDim: 8, FFN: ffn, Vocab: 100,
		CtxTrain: 128, RMSEps: 1e-5, RopeBase: 10000, RopeDim: 8, RopeScale: 1, RopeAttnFactor: 1}
}

func TestPlanTPRefuses(t *testing.T) {
	moe := tpConfig(8, 4, 64)
	moe.Experts, moe.ExpertsUsed = 4, 2
	cases := []struct {
		name  string
		c     Config
		ranks int
		want  string
	}{
		{"zero ranks", tpConfig(8, 4, 64), 0, "at least 1"},
		{"heads", tpConfig(6, 6, 64), 4, "6 query heads over 4 ranks"},
		{"kv heads", tpConfig(12, 6, 64), 4, "6 KV heads over 4 ranks"},
		{"ffn", tpConfig(8, 4, 66), 4, "feed-forward width 66 over 4 ranks"},
		{"experts", moe, 2, "mixture of 4 experts"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := PlanTP(&tc.c, tc.ranks)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("PlanTP: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestPlanTPCoversOnce checks that the ranks' spans of every split tensor
// cover each row or column exactly once (or, for replicated KV heads, that
// every rank holds the KV head its query heads read).
func TestPlanTPCoversOnce(t *testing.T) {
	cases := []struct {
		heads, kv, ranks int
		kvSplit          bool
	}{
		{8, 4, 1, true}, {8, 4, 2, true}, {8, 4, 4, true}, {8, 4, 8, false},
		{64, 8, 2, true}, {64, 8, 8, true}, {32, 2, 4, false}, {4, 1, 2, false},
	}
	for _, tc := range cases {
		c := tpConfig(tc.heads, tc.kv, 96)
		p, err := PlanTP(&c, tc.ranks)
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		if p.KVSplit != tc.kvSplit {
			t.Errorf("%+v: KVSplit %v", tc, p.KVSplit)
		}
		for _, id := range []TensorID{TokEmbd, AttnQ, AttnQKV, FFNGate, FFNGateUp, AttnOut, FFNDown} {
			width := int(c.Size(Spec(id).Shape[1]))
			if p.Split(id, 0).Axis == ByCols {
				width = int(c.Size(Spec(id).Shape[0]))
			}
			seen := make([]int, width)
			for r := range tc.ranks {
				for _, sp := range p.Split(id, r).Spans {
					for i := sp.Lo; i < sp.Hi; i++ {
						seen[i]++
					}
				}
			}
			for i, n := range seen {
				want := 1
				if id == AttnQKV && i >= tc.heads*c.HeadDim && !p.KVSplit {
					want = tc.ranks / tc.kv // each KV head on ranks/KVHeads ranks
				}
				if n != want {
					t.Errorf("%+v: %s: index %d held %d times, want %d", tc, Spec(id).Name, i, n, want)
					break
				}
			}
		}
		group := tc.heads / tc.kv
		for r := range tc.ranks {
			hs, kvs := p.HeadSpan(r), p.KVHeadSpan(r)
			rc := p.RankConfig(r)
			if err := rc.check(); err != nil {
				t.Errorf("%+v: rank %d config: %v", tc, r, err)
			}
			// Local query head j reads local KV head j/(rc.Heads/rc.KVHeads);
			// that must be the global head's own KV head.
			for j := range hs.Len() {
				if got, want := kvs.Lo+j/(rc.Heads/rc.KVHeads), (hs.Lo+j)/group; got != want {
					t.Errorf("%+v: rank %d query head %d reads KV head %d, want %d", tc, r, hs.Lo+j, got, want)
				}
			}
		}
	}
}

func TestReduces(t *testing.T) {
	c := tpConfig(8, 4, 64)
	p, err := PlanTP(&c, 2)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, st := range c.Arch.Build(&c).Blocks[0] {
		if p.Reduces(&st) {
			got = append(got, st.Name)
		}
	}
	if want := []string{"attn_out", "ffn_out"}; !slices.Equal(got, want) {
		t.Errorf("all-reduces after %v, want %v", got, want)
	}
}

// quantTensor returns a cols×rows tensor of type typ from random values,
// and its dequantized values.
func quantTensor(t *testing.T, typ gguf.Type, cols, rows int) (*Tensor, []float32) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, uint64(typ)))
	src := make([]float32, cols*rows)
	for i := range src {
		src[i] = rng.Float32()*2 - 1
	}
	n, err := typ.RowBytes(int64(cols))
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, n*int64(rows))
	if err := gguf.Quantize(typ, src, data); err != nil {
		t.Fatal(err)
	}
	vals := make([]float32, cols*rows)
	if err := gguf.Dequantize(typ, data, vals); err != nil {
		t.Fatal(err)
	}
	return &Tensor{Name: "w", Type: typ, Dims: []int64{int64(cols), int64(rows)}, Data: data}, vals
}

// TestSliceTensorExact checks that a cut tensor dequantizes to exactly the
// cut values of the whole one.
func TestSliceTensorExact(t *testing.T) {
	cases := []struct {
		typ  gguf.Type
		cols int
		s    TensorSplit
	}{
		{gguf.TypeF32, 12, TensorSplit{ByRows, []Span{{1, 3}}}},
		{gguf.TypeF32, 12, TensorSplit{ByRows, []Span{{0, 1}, {3, 5}}}},
		{gguf.TypeF32, 12, TensorSplit{ByCols, []Span{{4, 9}}}},
		{gguf.TypeF16, 12, TensorSplit{ByCols, []Span{{0, 6}}}},
		{gguf.TypeQ8_0, 128, TensorSplit{ByCols, []Span{{32, 96}}}},
		{gguf.TypeQ4_0, 128, TensorSplit{ByRows, []Span{{2, 4}}}},
		{gguf.TypeQ4_K, 512, TensorSplit{ByCols, []Span{{256, 512}}}},
		{gguf.TypeQ6_K, 512, TensorSplit{ByRows, []Span{{0, 2}, {3, 5}}}},
		{gguf.TypeQ8_0, 128, TensorSplit{Replicated, nil}},
	}
	const rows = 5
	for _, tc := range cases {
		t.Run(tc.typ.String()+"/"+tc.s.Axis.String(), func(t *testing.T) {
			whole, vals := quantTensor(t, tc.typ, tc.cols, rows)
			cut, err := SliceTensor(whole, tc.s)
			if err != nil {
				t.Fatal(err)
			}
			var want []float32
			for r := range rows {
				for c := range tc.cols {
					keep := tc.s.Axis == Replicated
					for _, sp := range tc.s.Spans {
						i := r
						if tc.s.Axis == ByCols {
							i = c
						}
						keep = keep || (i >= sp.Lo && i < sp.Hi)
					}
					if keep {
						want = append(want, vals[r*tc.cols+c])
					}
				}
			}
			if tc.s.Axis == ByRows { // rows come in span order, not file order
				want = want[:0]
				for _, sp := range tc.s.Spans {
					want = append(want, vals[sp.Lo*tc.cols:sp.Hi*tc.cols]...)
				}
			}
			if n := int(cut.Dims[0]) * cut.Rows(); n != len(want) {
				t.Fatalf("cut dims %v hold %d values, want %d", cut.Dims, n, len(want))
			}
			got := make([]float32, len(want))
			if err := gguf.Dequantize(cut.Type, cut.Data, got); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("cut values differ:\n got %v\nwant %v", got[:min(8, len(got))], want[:min(8, len(want))])
			}
		})
	}
}

func TestSliceTensorRefuses(t *testing.T) {
	cases := []struct {
		typ  gguf.Type
		cols int
		s    TensorSplit
		want string
	}{
		{gguf.TypeQ4_K, 512, TensorSplit{ByCols, []Span{{0, 128}}}, "whole 256-value quant blocks"},
		{gguf.TypeQ8_0, 128, TensorSplit{ByCols, []Span{{16, 64}}}, "whole 32-value quant blocks"},
		{gguf.TypeF32, 8, TensorSplit{ByRows, []Span{{4, 9}}}, "rows [4, 9) of 5"},
		{gguf.TypeF32, 8, TensorSplit{ByCols, []Span{{4, 9}}}, "columns [4, 9) of 8"},
	}
	for _, tc := range cases {
		whole, _ := quantTensor(t, tc.typ, tc.cols, 5)
		_, err := SliceTensor(whole, tc.s)
		if err == nil || !errors.Is(err, ErrNoSplit) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: %v, want ErrNoSplit containing %q", tc.typ, tc.s, err, tc.want)
		}
	}
}
