package decode

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"llmserve/gguf"
	"llmserve/internal/nmse"
	"llmserve/internal/shared"
	"llmserve/model"
	"llmserve/model/tokenizer"
)

// tpSelfTolerance bounds the NMSE between the split engine's logits and
// the single CPU engine's: the same kernels on the same bytes, summed in
// another grouping.
func tpSelfTolerance(name string) float64 {
	if strings.HasSuffix(name, "-F32") {
		return 1e-5
	}
	return goldenTolerance(name)
}

// TestTPGoldenLogits runs every golden model split over 2 and 4 ranks and
// compares its logits with the single CPU engine's and llama.cpp's. The
// golden models' attn_output and ffn_down rows are 256 values: at 2 or more
// ranks their K-quant blocks (256 values) cannot be split, and the split
// must refuse them by name.
func TestTPGoldenLogits(t *testing.T) {
	forEachGolden(t, func(t *testing.T, dir, name string) {
		m := loadModel(t, "golden/"+name+".gguf")
		ref := readF32s(t, filepath.Join(dir, name+".logits.f32"))
		want := cpuLogits(t, m, goldenTokens)
		for _, ranks := range []int{2, 4} {
			t.Run(fmt.Sprintf("tp%d", ranks), func(t *testing.T) {
				e, err := NewTPCPUEngine(m, ranks, CPUOptions{Context: 64})
				if strings.Contains(name, "_K") {
					if err == nil || !errors.Is(err, model.ErrNoSplit) || !strings.Contains(err.Error(), "quant blocks") {
						t.Fatalf("NewTPCPUEngine: %v, want a refusal of the K-quant column split", err)
					}
					t.Logf("refused as expected: %v", err)
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				defer e.Close()
				got := forwardAll(t, e, goldenTokens, 0)
				self, tol := nmse.Of(got, want), tpSelfTolerance(name)
				gold, gtol := nmse.Of(got, ref), goldenTolerance(name)
				t.Logf("NMSE %.3g against the single engine (tolerance %.0e), %.3g against llama.cpp (%.0e)", self, tol, gold, gtol)
				if self > tol {
					t.Errorf("NMSE %.3g against the single engine exceeds %.0e", self, tol)
				}
				if gold > gtol {
					t.Errorf("NMSE %.3g against llama.cpp exceeds %.0e", gold, gtol)
				}
			})
		}
	})
}

// TestTPStoriesGreedy generates 255 greedy tokens from BOS on stories260K
// split over 2 ranks (picking on the gathered logits and across the ranks)
// and 4 ranks (across the ranks), and compares ids and text with the
// reference.
func TestTPStoriesGreedy(t *testing.T) {
	wantIDs := storiesGreedyIDs(t)
	wantText, err := os.ReadFile(shared.Path(t, "models/stories260K.greedy.txt"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(shared.Path(t, "models/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := model.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		ranks    int
		gathered bool
	}{{2, true}, {2, false}, {4, false}}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("tp%d/gathered=%v", tc.ranks, tc.gathered), func(t *testing.T) {
			e, err := NewTPCPUEngine(m, tc.ranks, CPUOptions{Context: 512})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			var got []int32
			if tc.gathered {
				got = greedy(t, e, []int32{1}, len(wantIDs))
			} else {
				got = greedyAcross(t, e, 1, len(wantIDs))
			}
			if !slices.Equal(got, wantIDs) {
				i := 0
				for i < min(len(got), len(wantIDs)) && got[i] == wantIDs[i] {
					i++
				}
				t.Fatalf("token %d differs: got %v..., want %v...", i, got[:min(i+1, len(got))], wantIDs[:min(i+1, len(wantIDs))])
			}
			text := strings.TrimPrefix(tok.Decode(got), " ")
			if want := strings.TrimSuffix(string(wantText), "\n"); text != want {
				t.Errorf("text differs\n got %q\nwant %q", text, want)
			}
		})
	}
}

// greedyAcross generates n tokens after bos, one per step, each picked
// across the ranks by ForwardGreedy.
func greedyAcross(t *testing.T, e *TPCPUEngine, bos int32, n int) []int32 {
	t.Helper()
	var b Batch
	tok := []int32{0}
	next := bos
	var out []int32
	for pos := 0; len(out) < n; pos++ {
		b.Reset()
		b.Add(next, int32(pos), 0, true)
		if err := e.ForwardGreedy(&b, tok); err != nil {
			t.Fatal(err)
		}
		next = tok[0]
		out = append(out, next)
	}
	return out
}

func TestTPRefusesShapes(t *testing.T) {
	m := loadModel(t, "golden/tiny-llama-F32.gguf")
	cases := []struct {
		ranks int
		want  string
	}{
		{3, "4 query heads over 3 ranks"},
		{0, "at least 1"},
	}
	for _, tc := range cases {
		e, err := NewTPCPUEngine(m, tc.ranks, CPUOptions{Context: 64})
		if err == nil {
			e.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%d ranks: %v, want an error containing %q", tc.ranks, err, tc.want)
		}
	}
}

// TestMergeBest checks that the pick across ranks is the pick over the
// whole row, ties, NaN and -Inf included.
func TestMergeBest(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	cases := []struct {
		name   string
		row    []float32
		ranks  int
		wantID int32
	}{
		{"tie across ranks", []float32{0, 1, 3, 2, 3, 0}, 2, 2},
		{"tie inside a rank", []float32{0, 0, 1, 5, 5, 2}, 3, 3},
		{"nan skipped", []float32{nan, 1, nan, 2}, 2, 3},
		{"all -inf", []float32{-inf, -inf, -inf, -inf}, 2, 0},
		{"+inf wins", []float32{1, 2, inf, 3, inf}, 2, 2},
		{"uneven spans", []float32{4, 1, 9, 2, 9, 0, 1}, 3, 2},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 20 {
		row := make([]float32, 1+rng.IntN(40))
		for j := range row {
			row[j] = float32(rng.IntN(5)) // many ties
		}
		cases = append(cases, struct {
			name   string
			row    []float32
			ranks  int
			wantID int32
		}{fmt.Sprintf("random %d", i), row, 1 + rng.IntN(len(row)), argmaxLogits(row)})
	}
	for _, tc := range cases {
		if tc.wantID != argmaxLogits(tc.row) {
			t.Fatalf("%s: the case's id %d is not argmaxLogits' %d", tc.name, tc.wantID, argmaxLogits(tc.row))
		}
		parts := make([]ShardBest, tc.ranks)
		for r := range tc.ranks {
			lo, hi := r*len(tc.row)/tc.ranks, (r+1)*len(tc.row)/tc.ranks
			parts[r] = BestOfShard(tc.row[lo:hi], lo)
		}
		if got := MergeBest(parts); got != tc.wantID {
			t.Errorf("%s: %v over %d ranks: picked %d, want %d", tc.name, tc.row, tc.ranks, got, tc.wantID)
		}
	}
}

// TestTPGoldenArchLogits splits the gemma2 (input scale, post-norms, soft
// caps, tied output, one KV head replicated), phi3 (fused Q/K/V and
// gate/up) and Mixtral-style models of ../shared/golden-arch, or checks
// the refusal where the shapes do not split.
func TestTPGoldenArchLogits(t *testing.T) {
	cases := []struct {
		name  string
		ranks int
		want  string // the refusal; "": it splits
	}{
		{"tiny-gemma2-F32", 2, ""},
		{"tiny-gemma2-F32", 4, "2 query heads over 4 ranks"},
		{"tiny-gemma2-Q8_0", 2, "columns [0, 16) do not fall on whole 32-value quant blocks"},
		{"tiny-phi3-F32", 2, ""},
		{"tiny-phi3-F32", 4, ""},
		{"tiny-phi3-Q8_0", 2, ""},
		{"tiny-phi3-Q8_0", 4, ""},
		{"tiny-mixtral-F32", 2, "a mixture of 4 experts"},
	}
	dir := shared.Path(t, "golden-arch")
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/tp%d", tc.name, tc.ranks), func(t *testing.T) {
			m := loadModel(t, "golden-arch/"+tc.name+".gguf")
			e, err := NewTPCPUEngine(m, tc.ranks, CPUOptions{Context: 64})
			if tc.want != "" {
				if err == nil {
					e.Close()
				}
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("NewTPCPUEngine: %v, want an error containing %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			want := cpuLogits(t, m, goldenTokens)
			got := forwardAll(t, e, goldenTokens, 0)
			ref := readF32s(t, filepath.Join(dir, tc.name+".logits.f32"))
			self, tol := nmse.Of(got, want), tpSelfTolerance(tc.name)
			gold, gtol := nmse.Of(got, ref), goldenArchTolerance(tc.name)
			t.Logf("NMSE %.3g against the single engine (tolerance %.0e), %.3g against llama.cpp (%.0e)", self, tol, gold, gtol)
			if self > tol {
				t.Errorf("NMSE %.3g against the single engine exceeds %.0e", self, tol)
			}
			if gold > gtol {
				t.Errorf("NMSE %.3g against llama.cpp exceeds %.0e", gold, gtol)
			}
		})
	}
}
