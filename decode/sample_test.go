package decode

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func newSampler(t *testing.T, p SamplerParams, vocab int) *Sampler {
	t.Helper()
	s, err := NewSampler(p, vocab)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sample(t *testing.T, s *Sampler, logits []float32) Sampled {
	t.Helper()
	got, err := s.Sample(logits)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestSamplerGreedy(t *testing.T) {
	tests := []struct {
		name   string
		p      SamplerParams
		logits []float32
		want   int32
	}{
		{"argmax", SamplerParams{}, []float32{0.1, 2, -1, 1.9}, 1},
		{"tie takes lower id", SamplerParams{}, []float32{3, 1, 3}, 0},
		{"bias moves choice", SamplerParams{LogitBias: map[int32]float32{3: 0.5}}, []float32{0.1, 2, -1, 1.9}, 3},
		{"ban best", SamplerParams{LogitBias: map[int32]float32{1: float32(math.Inf(-1))}}, []float32{0.1, 2, -1, 1.9}, 3},
		{"top-k 1 at high temperature", SamplerParams{Temperature: 5, TopK: 1}, []float32{0.1, 2, -1, 1.9}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSampler(t, tt.p, len(tt.logits))
			for range 20 {
				if got := sample(t, s, tt.logits).Token; got != tt.want {
					t.Fatalf("sampled %d, want %d", got, tt.want)
				}
			}
		})
	}
}

func TestSamplerPenalties(t *testing.T) {
	logits := []float32{2, -2, 1, 0.5, 3}
	history := []int32{0, 1, 0, 3, 2} // window of 4 keeps 1, 0, 3, 2
	tests := []struct {
		name string
		p    SamplerParams
		want []float32
	}{
		{"repeat", SamplerParams{RepeatPenalty: 2, PenaltyLastN: 4},
			[]float32{1, -4, 0.5, 0.25, 3}},
		{"presence", SamplerParams{PresencePenalty: 0.5, PenaltyLastN: 4},
			[]float32{1.5, -2.5, 0.5, 0, 3}},
		{"frequency counts occurrences", SamplerParams{FrequencyPenalty: 1, PenaltyLastN: 5},
			[]float32{0, -3, 0, -0.5, 3}},
		{"window of 1", SamplerParams{RepeatPenalty: 2, PenaltyLastN: 1},
			[]float32{2, -2, 0.5, 0.5, 3}},
		{"off without window", SamplerParams{RepeatPenalty: 2},
			[]float32{2, -2, 1, 0.5, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.p
			p.Temperature = 1 // draw from the working copy of the logits, which the test reads
			s := newSampler(t, p, len(logits))
			for _, h := range history {
				s.Accept(h)
			}
			sample(t, s, logits)
			for i, c := range s.cands {
				if c.id != int32(i) || c.logit != tt.want[i] {
					t.Errorf("token %d: penalized logit %v (id %d), want %v", i, c.logit, c.id, tt.want[i])
				}
			}
			// Penalties must not disturb the window counts.
			sample(t, s, logits)
			for i, c := range s.cands {
				if c.logit != tt.want[i] {
					t.Errorf("second step token %d: %v, want %v", i, c.logit, tt.want[i])
				}
			}
		})
	}
}

// TestSamplerDistribution draws many tokens and compares their frequencies
// with the distribution each filter should leave.
func TestSamplerDistribution(t *testing.T) {
	logits := []float32{2, 1.5, 1, 0, -1, -3}
	soft := func(l []float32, temp float64, keep []int) []float64 {
		p := make([]float64, len(l))
		var sum float64
		for _, i := range keep {
			p[i] = math.Exp(float64(l[i]) / temp)
			sum += p[i]
		}
		for i := range p {
			p[i] /= sum
		}
		return p
	}
	tests := []struct {
		name string
		p    SamplerParams
		want []float64
	}{
		{"temperature 1", SamplerParams{Temperature: 1}, soft(logits, 1, []int{0, 1, 2, 3, 4, 5})},
		{"temperature 0.5", SamplerParams{Temperature: 0.5}, soft(logits, 0.5, []int{0, 1, 2, 3, 4, 5})},
		{"top-k 3", SamplerParams{Temperature: 1, TopK: 3}, soft(logits, 1, []int{0, 1, 2})},
		// probabilities at T=1: .416 .252 .153 .056 .021 .003: top-p .6 keeps two
		{"top-p 0.6", SamplerParams{Temperature: 1, TopP: 0.6}, soft(logits, 1, []int{0, 1})},
		// min-p .3 keeps p >= .125: three tokens
		{"min-p 0.3", SamplerParams{Temperature: 1, MinP: 0.3}, soft(logits, 1, []int{0, 1, 2})},
		{"top-k then temperature", SamplerParams{Temperature: 2, TopK: 4}, soft(logits, 2, []int{0, 1, 2, 3})},
	}
	const draws = 40000
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.p.Seed = 7
			s := newSampler(t, tt.p, len(logits))
			counts := make([]float64, len(logits))
			for range draws {
				counts[sample(t, s, logits).Token]++
			}
			for i := range counts {
				got := counts[i] / draws
				// 5 standard deviations of a binomial frequency, plus a floor.
				tol := 5*math.Sqrt(tt.want[i]*(1-tt.want[i])/draws) + 1e-9
				if math.Abs(got-tt.want[i]) > tol {
					t.Errorf("token %d: frequency %.4f, want %.4f ± %.4f", i, got, tt.want[i], tol)
				}
			}
		})
	}
}

func TestSamplerSeedReproducible(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	logits := make([]float32, 300)
	for i := range logits {
		logits[i] = float32(rng.NormFloat64())
	}
	p := SamplerParams{Temperature: 0.9, TopK: 40, TopP: 0.95, MinP: 0.02, RepeatPenalty: 1.1, PenaltyLastN: 64}
	run := func(seed uint64) []int32 {
		p.Seed = seed
		s := newSampler(t, p, len(logits))
		var out []int32
		for range 50 {
			tok := sample(t, s, logits).Token
			s.Accept(tok)
			out = append(out, tok)
		}
		return out
	}
	a, b, c := run(42), run(42), run(43)
	if !slices.Equal(a, b) {
		t.Errorf("same seed gave different tokens:\n%v\n%v", a, b)
	}
	if slices.Equal(a, c) {
		t.Errorf("seeds 42 and 43 gave the same 50 tokens %v", a)
	}
}

func TestSamplerLogprobs(t *testing.T) {
	logits := []float32{1, 3, 2, -1, 0.5}
	s := newSampler(t, SamplerParams{Logprobs: true, TopLogprobs: 3}, len(logits))
	got := sample(t, s, logits)
	var z float64
	for _, l := range logits {
		z += math.Exp(float64(l))
	}
	lp := func(i int) float32 { return float32(float64(logits[i]) - math.Log(z)) }
	if got.Token != 1 || math.Abs(float64(got.Logprob-lp(1))) > 1e-6 {
		t.Errorf("token %d logprob %v, want 1 and %v", got.Token, got.Logprob, lp(1))
	}
	wantIDs := []int32{1, 2, 0}
	if len(got.Top) != 3 {
		t.Fatalf("%d top logprobs, want 3", len(got.Top))
	}
	for i, w := range wantIDs {
		if got.Top[i].ID != w || math.Abs(float64(got.Top[i].Logprob-lp(int(w)))) > 1e-6 {
			t.Errorf("top %d: %+v, want id %d logprob %v", i, got.Top[i], w, lp(int(w)))
		}
	}
}

func TestSelectTopMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 200 {
		n := 1 + rng.IntN(200)
		k := 1 + rng.IntN(n)
		c := make([]candidate, n)
		for i := range c {
			// few distinct values so that ties are common
			c[i] = candidate{id: int32(i), logit: float32(rng.IntN(7))}
		}
		want := slices.Clone(c)
		slices.SortFunc(want, byLogitDesc)
		selectTop(c, k)
		got := slices.Clone(c[:k])
		slices.SortFunc(got, byLogitDesc)
		if !slices.Equal(got, want[:k]) {
			t.Fatalf("trial %d (n=%d k=%d): selected %v, want %v", trial, n, k, got, want[:k])
		}
	}
}

// TestTopPMatchesFullSort compares topP with a cut over a fully sorted
// copy, for cuts inside and beyond the prefix topP sorts first.
func TestTopPMatchesFullSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for _, tt := range []struct {
		n     int
		p     float32
		scale float64
	}{{50, 0.9, 2}, {2000, 0.5, 3}, {2000, 0.95, 0.2}, {5000, 0.99, 0.01}} {
		c := make([]candidate, tt.n)
		for i := range c {
			c[i] = candidate{id: int32(i), logit: float32(rng.NormFloat64() * tt.scale)}
		}
		ref := slices.Clone(c)
		slices.SortFunc(ref, byLogitDesc)
		softmax(ref, 1)
		var cum float32
		want := ref
		for i := range ref {
			cum += ref[i].p
			if cum >= tt.p {
				want = ref[:i+1]
				break
			}
		}
		got := topP(c, tt.p, false)
		if len(got) != len(want) {
			t.Errorf("n=%d p=%v: kept %d, want %d", tt.n, tt.p, len(got), len(want))
			continue
		}
		for i := range got {
			if got[i].id != want[i].id {
				t.Errorf("n=%d p=%v: candidate %d is %d, want %d", tt.n, tt.p, i, got[i].id, want[i].id)
				break
			}
		}
	}
}

func TestSamplerNoAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	logits := make([]float32, 1000)
	for i := range logits {
		logits[i] = float32(rng.NormFloat64())
	}
	s := newSampler(t, SamplerParams{Temperature: 0.8, TopK: 40, TopP: 0.9, MinP: 0.05, RepeatPenalty: 1.1,
		FrequencyPenalty: 0.1, PenaltyLastN: 64, LogitBias: map[int32]float32{3: 1}, Logprobs: true, TopLogprobs: 5}, len(logits))
	allocs := testing.AllocsPerRun(100, func() {
		got, _ := s.Sample(logits)
		s.Accept(got.Token)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per token, want 0", allocs)
	}
}

func TestNewSamplerRejects(t *testing.T) {
	tests := []struct {
		name string
		p    SamplerParams
	}{
		{"top logprobs too many", SamplerParams{TopLogprobs: MaxTopLogprobs + 1}},
		{"bias outside vocabulary", SamplerParams{LogitBias: map[int32]float32{10: 1}}},
		{"NaN temperature", SamplerParams{Temperature: float32(math.NaN())}},
		{"negative repeat penalty", SamplerParams{RepeatPenalty: -1}},
	}
	for _, tt := range tests {
		if _, err := NewSampler(tt.p, 10); err == nil {
			t.Errorf("%s: no error", tt.name)
		}
	}
}

func BenchmarkSampler32k(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	logits := make([]float32, 32000)
	for i := range logits {
		logits[i] = float32(rng.NormFloat64())
	}
	for _, p := range []SamplerParams{
		{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, RepeatPenalty: 1.1, PenaltyLastN: 64},
		{Temperature: 0.8, TopP: 0.9},
		{},
	} {
		b.Run(fmt.Sprintf("k=%d,p=%v,T=%v", p.TopK, p.TopP, p.Temperature), func(b *testing.B) {
			s, _ := NewSampler(p, len(logits))
			b.ReportAllocs()
			for b.Loop() {
				got, _ := s.Sample(logits)
				s.Accept(got.Token)
			}
		})
	}
}
