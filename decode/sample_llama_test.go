package decode

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

func candidatesOf(logits []float32) []candidate {
	c := make([]candidate, len(logits))
	for i, l := range logits {
		c[i] = candidate{id: int32(i), logit: l}
	}
	return c
}

func idsOf(c []candidate) []int32 {
	ids := make([]int32, len(c))
	for i, x := range c {
		ids[i] = x.id
	}
	slices.Sort(ids)
	return ids
}

// probs64 is the softmax of logits in float64.
func probs64(logits []float32) []float64 {
	m := math.Inf(-1)
	for _, l := range logits {
		m = math.Max(m, float64(l))
	}
	p := make([]float64, len(logits))
	var sum float64
	for i, l := range logits {
		p[i] = math.Exp(float64(l) - m)
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
	return p
}

// TestTypicalMatchesReference compares typical sampling with a float64
// reference of llama.cpp's definition.
func TestTypicalMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 200 {
		n := 2 + rng.IntN(30)
		logits := make([]float32, n)
		for i := range logits {
			logits[i] = float32(rng.NormFloat64() * 2)
		}
		p := float32(0.05 + 0.9*rng.Float64())
		// Reference.
		pr := probs64(logits)
		var h float64
		for _, q := range pr {
			h -= q * math.Log(q)
		}
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool {
			return math.Abs(-math.Log(pr[idx[a]])-h) < math.Abs(-math.Log(pr[idx[b]])-h)
		})
		var cum float64
		keep := n
		for i, j := range idx {
			cum += pr[j]
			if cum > float64(p) {
				keep = i + 1
				break
			}
		}
		want := make([]int32, keep)
		for i := range want {
			want[i] = int32(idx[i])
		}
		slices.Sort(want)
		got := idsOf(typical(candidatesOf(logits), p))
		if !slices.Equal(got, want) {
			// Float32 rounding may move one boundary token: accept a
			// difference of one token only when the cumulative mass is at p.
			if d := len(got) - len(want); d*d != 1 || math.Abs(cum-float64(p)) > 1e-5 {
				t.Fatalf("trial %d: logits %v p %v: kept %v, want %v", trial, logits, p, got, want)
			}
		}
	}
}

// TestTopNSigmaMatchesReference checks the kept set against the mean and
// standard deviation computed in float64.
func TestTopNSigmaMatchesReference(t *testing.T) {
	tests := []struct {
		logits []float32
		n      float32
		want   []int32
	}{
		// mean 2.5, std sqrt(1.25) = 1.118: max - 1*std = 2.882
		{[]float32{1, 2, 3, 4}, 1, []int32{2, 3}},
		// max - 2*std = 1.764
		{[]float32{1, 2, 3, 4}, 2, []int32{1, 2, 3}},
		// -Inf is left out of the statistics: as {1, 2, 3, 4}
		{[]float32{1, ninf, 2, 3, 4}, 1, []int32{3, 4}},
		// equal logits: std 0 keeps all
		{[]float32{5, 5, 5}, 0.5, []int32{0, 1, 2}},
	}
	for _, tt := range tests {
		got := idsOf(topNSigma(candidatesOf(tt.logits), tt.n))
		if !slices.Equal(got, tt.want) {
			t.Errorf("topNSigma(%v, %v) kept %v, want %v", tt.logits, tt.n, got, tt.want)
		}
	}
}

// TestXTC checks which tokens XTC leaves: all but the least likely of
// those at or above the threshold.
func TestXTC(t *testing.T) {
	logits := []float32{3, 2.5, 2, 0, -1} // probabilities .49 .30 .18 .02 .01
	tests := []struct {
		name      string
		prob, thr float32
		want      []int32
	}{
		{"removes the two above 0.15 ahead of the third", 1, 0.15, []int32{2, 3, 4}},
		{"one above: nothing removed", 1, 0.4, []int32{0, 1, 2, 3, 4}},
		{"threshold above 0.5 is off", 1, 0.6, []int32{0, 1, 2, 3, 4}},
		{"probability 0 is off", 0, 0.15, []int32{0, 1, 2, 3, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSampler(t, SamplerParams{Temperature: 1, XTCProbability: tt.prob, XTCThreshold: tt.thr}, len(logits))
			seen := map[int32]bool{}
			for range 2000 {
				seen[sample(t, s, logits).Token] = true
			}
			var got []int32
			for id := range seen {
				got = append(got, id)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("sampled %v, want %v", got, tt.want)
			}
		})
	}
}

// TestMirostat2MatchesReference replays Mirostat 2 in float64 with the
// same draws and compares each pick and mu.
func TestMirostat2MatchesReference(t *testing.T) {
	logits := []float32{2, 1.5, 1, 0.2, -0.5, -1, -3}
	const tau, eta, temp = 2.0, 0.3, 0.8
	s := newSampler(t, SamplerParams{Temperature: temp, Mirostat: 2, MirostatTau: tau, MirostatEta: eta}, len(logits))
	scaled := make([]float32, len(logits))
	for i, l := range logits {
		scaled[i] = l / temp
	}
	p := probs64(scaled) // already best first
	mu := 2.0 * tau
	rng := rand.New(rand.NewPCG(1, 2))
	for step := range 50 {
		u := float32(rng.Float64())
		n := len(p)
		for i, q := range p {
			if -math.Log2(q) > mu {
				n = i
				break
			}
		}
		n = max(n, 1)
		var sum float64
		for _, q := range p[:n] {
			sum += q
		}
		pick, cum := n-1, 0.0
		for i, q := range p[:n] {
			cum += q / sum
			if float64(u) < cum {
				pick = i
				break
			}
		}
		mu -= eta * (-math.Log2(p[pick]/sum) - tau)
		got, err := s.SampleDrawn(logits, u)
		if err != nil {
			t.Fatal(err)
		}
		if got.Token != int32(pick) || math.Abs(float64(s.mu)-mu) > 1e-4 {
			t.Fatalf("step %d: picked %d with mu %v, want %d with mu %v", step, got.Token, s.mu, pick, mu)
		}
	}
}

// TestMirostat1K checks Mirostat 1's estimate of how many tokens to keep
// on a Zipf distribution, where s_hat is exact.
func TestMirostat1K(t *testing.T) {
	const vocab, zipf = 1000, 1.2
	logits := make([]float32, vocab)
	for i := range logits {
		logits[i] = float32(-zipf * math.Log(float64(i+1))) // p_i ∝ (i+1)^-zipf
	}
	for _, mu := range []float64{2, 4, 6, 8} {
		s := newSampler(t, SamplerParams{Temperature: 1, Mirostat: 1, MirostatTau: 3, MirostatEta: 0.1}, vocab)
		s.mu = float32(mu)
		c := candidatesOf(logits)
		softmax(c, 1)
		eps := zipf - 1
		want := math.Pow(eps*math.Pow(2, mu)/(1-math.Pow(vocab, -eps)), 1/zipf)
		if got := s.mirostatK(c); math.Abs(float64(got)-math.Floor(want)) > 1 {
			t.Errorf("mu %v: k = %d, want %v", mu, got, math.Floor(want))
		}
	}
}

// dryReference is DRY without sequence breakers, by its definition: for
// every earlier position, the length of the match between the text before
// it and the end of the history; the token there is penalized
// mult*base^(len-allowed) for its longest match of at least allowed.
func dryReference(hist []int32, logits []float32, mult, base float32, allowed int) []float32 {
	out := slices.Clone(logits)
	best := map[int32]int{}
	n := len(hist)
	for j := 1; j < n; j++ { // hist[j] follows hist[:j]
		m := 0
		for m < j && hist[j-1-m] == hist[n-1-m] {
			m++
		}
		if m >= allowed {
			if b, ok := best[hist[j]]; !ok || m > b {
				best[hist[j]] = m
			}
		}
	}
	for tok, m := range best {
		out[tok] -= float32(float64(mult) * math.Pow(float64(base), float64(m-allowed)))
	}
	return out
}

// TestDRYMatchesReference compares DRY's penalties with the direct
// definition on random histories over a small alphabet.
func TestDRYMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const vocab = 27
	for trial := range 300 {
		n := 1 + rng.IntN(40)
		alpha := 1 + rng.IntN(4)
		hist := make([]int32, n)
		for i := range hist {
			hist[i] = int32(rng.IntN(alpha))
		}
		allowed := rng.IntN(4)
		p := SamplerParams{DRYMultiplier: 0.8, DRYBase: 1.75, DRYAllowedLength: allowed, DRYSequenceBreakers: []string{}}
		s := newSampler(t, p, vocab)
		for _, h := range hist {
			s.Accept(h)
		}
		logits := make([]float32, vocab)
		c := candidatesOf(logits)
		s.dry.apply(c)
		want := dryReference(hist, logits, p.DRYMultiplier, p.DRYBase, allowed)
		for i := range c {
			if math.Abs(float64(c[i].logit-want[i])) > 1e-4 {
				t.Fatalf("trial %d: history %v allowed %d: token %d penalized to %v, want %v", trial, hist, allowed, i, c[i].logit, want[i])
			}
		}
	}
}

// TestDRYBreakers checks hand-computed cases with letterText's tokens
// ("a".."z", ":") and the breakers ":" and "ab".
func TestDRYBreakers(t *testing.T) {
	const a, b, c, e, colon = 0, 1, 2, 4, 26
	tests := []struct {
		name    string
		hist    []int32
		allowed int
		want    map[int32]float32 // penalized tokens and their penalty
	}{
		// "ecdecd": "ecd" repeats, "e" follows: length 3, 2^(3-2).
		{"plain repeat", []int32{e, c, d(), e, c, d()}, 2, map[int32]float32{e: 2}},
		// "abcab": the breaker "ab" is in the repeat and cuts it to nothing.
		{"breaker in the repeat", []int32{c, a, b, c, a, b}, 1, map[int32]float32{}},
		// a ":" in the repeat cuts it to 1 token ("b"): below 2.
		{"single-token breaker cuts the repeat", []int32{a, colon, b, c, a, colon, b}, 2, map[int32]float32{}},
		// allowed 1: the cut repeat "b" (length 1) penalizes c by 2^0.
		{"cut repeat at allowed 1", []int32{a, colon, b, c, a, colon, b}, 1, map[int32]float32{c: 1}},
		// "ab" as two tokens breaks: the repeat "dab"... stops after "b".
		{"two-token breaker", []int32{d(), a, b, c, d(), a, b}, 1, map[int32]float32{}},
		// the breaker ":" itself is never penalized.
		{"breaker not penalized", []int32{c, colon, c, colon, c}, 1, map[int32]float32{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := SamplerParams{DRYMultiplier: 1, DRYBase: 2, DRYAllowedLength: tt.allowed, DRYSequenceBreakers: []string{":", "ab"}}
			s, err := NewSamplerText(p, 27, letterText{})
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range tt.hist {
				s.Accept(h)
			}
			cs := candidatesOf(make([]float32, 27))
			s.dry.apply(cs)
			for _, x := range cs {
				if want := -tt.want[x.id]; x.logit != want {
					t.Errorf("token %d: logit %v, want %v", x.id, x.logit, want)
				}
			}
		})
	}
}

func d() int32 { return 3 }

// TestSamplerOrder checks that Samplers sets the order: min-p before the
// temperature cuts on the raw logits, after it on the scaled ones.
func TestSamplerOrder(t *testing.T) {
	logits := []float32{0, -1, -3} // at T=2: 0, -0.5, -1.5; min-p 0.2 cuts at -1.61
	tests := []struct {
		order  []string
		third  bool // token 2 may be drawn
		second bool
	}{
		{[]string{"min_p", "temperature"}, false, true},
		{[]string{"temperature", "min_p"}, true, true},
		{nil, false, true},
		{[]string{"top_k", "temperature"}, false, false}, // top-k 1
	}
	for _, tt := range tests {
		p := SamplerParams{Temperature: 2, MinP: 0.2, Samplers: tt.order, Seed: 1}
		if tt.order != nil && tt.order[0] == "top_k" {
			p.TopK = 1
		}
		s := newSampler(t, p, len(logits))
		seen := map[int32]bool{}
		for range 1000 {
			seen[sample(t, s, logits).Token] = true
		}
		if seen[2] != tt.third || seen[1] != tt.second || !seen[0] {
			t.Errorf("order %v: drew %v, want token 1 %v, token 2 %v", tt.order, seen, tt.second, tt.third)
		}
	}
}

// TestSamplerHostOnly checks that the samplers the device cannot run keep
// the pick on the host.
func TestSamplerHostOnly(t *testing.T) {
	tests := []struct {
		name string
		p    SamplerParams
		dev  bool
	}{
		{"plain", SamplerParams{Temperature: 1, TopK: 40, TopP: 0.9, MinP: 0.05}, true},
		{"typical", SamplerParams{Temperature: 1, TypicalP: 0.9}, false},
		{"top-n-sigma", SamplerParams{Temperature: 1, TopNSigma: 1}, false},
		{"xtc", SamplerParams{Temperature: 1, XTCProbability: 0.5, XTCThreshold: 0.1}, false},
		{"xtc off by threshold", SamplerParams{Temperature: 1, XTCProbability: 0.5, XTCThreshold: 0.6}, true},
		{"mirostat", SamplerParams{Temperature: 1, Mirostat: 2, MirostatTau: 5}, false},
		{"dry", SamplerParams{Temperature: 1, DRYMultiplier: 0.8, DRYBase: 1.75, DRYSequenceBreakers: []string{}}, false},
		{"order", SamplerParams{Temperature: 1, Samplers: []string{"top_k", "temperature"}}, false},
	}
	for _, tt := range tests {
		if got := newSampler(t, tt.p, 8).OnDevice(); got != tt.dev {
			t.Errorf("%s: OnDevice = %v, want %v", tt.name, got, tt.dev)
		}
	}
}

// TestSamplerSeededExtended checks that seeded runs of the host-only
// samplers repeat.
func TestSamplerSeededExtended(t *testing.T) {
	p := SamplerParams{Temperature: 0.9, XTCProbability: 0.5, XTCThreshold: 0.1, TypicalP: 0.95, TopNSigma: 2,
		DRYMultiplier: 0.8, DRYBase: 1.75, DRYAllowedLength: 2, Seed: 42}
	logits := make([]float32, 27)
	run := func() []int32 {
		s, err := NewSamplerText(p, len(logits), letterText{})
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(9, 9))
		var out []int32
		for range 100 {
			for i := range logits {
				logits[i] = float32(rng.NormFloat64())
			}
			tok := sample(t, s, logits).Token
			s.Accept(tok)
			out = append(out, tok)
		}
		return out
	}
	if a, b := run(), run(); !slices.Equal(a, b) {
		t.Errorf("seeded runs differ:\n%v\n%v", a, b)
	}
}
