package decode

import (
	"errors"
	"math"
	"testing"
)

var (
	inf  = float32(math.Inf(1))
	nan  = float32(math.NaN())
	ninf = float32(math.Inf(-1))
)

// TestSamplerTotal checks that inputs at the edges give a defined pick (one
// of the allowed tokens) or errNoToken, never a panic.
func TestSamplerTotal(t *testing.T) {
	allBanned := map[int32]float32{0: ninf, 1: ninf, 2: ninf, 3: ninf}
	tests := []struct {
		name    string
		p       SamplerParams
		logits  []float32
		history []int32
		allowed []int32 // tokens the pick may be; nil: an error is wanted
	}{
		{"all NaN greedy", SamplerParams{}, []float32{nan, nan, nan, nan}, nil, nil},
		{"all NaN sampled", SamplerParams{Temperature: 1, TopK: 2, TopP: 0.5, MinP: 0.1}, []float32{nan, nan, nan, nan}, nil, nil},
		{"all -Inf", SamplerParams{Temperature: 0.7}, []float32{ninf, ninf, ninf, ninf}, nil, nil},
		{"bias bans every token", SamplerParams{Temperature: 1, LogitBias: allBanned}, []float32{1, 2, 3, 4}, nil, nil},
		{"bias bans every token greedy", SamplerParams{LogitBias: allBanned}, []float32{1, 2, 3, 4}, nil, nil},
		{"NaN is never picked greedy", SamplerParams{}, []float32{nan, 1, nan, 0}, nil, []int32{1}},
		{"NaN is never picked sampled", SamplerParams{Temperature: 100}, []float32{nan, 1, nan, 0}, nil, []int32{1, 3}},
		{"+Inf wins greedy", SamplerParams{}, []float32{1, inf, 3, nan}, nil, []int32{1}},
		{"+Inf wins sampled", SamplerParams{Temperature: 1}, []float32{1, inf, 3, nan}, nil, []int32{1}},
		{"two +Inf", SamplerParams{Temperature: 2, TopP: 0.9}, []float32{inf, 0, inf, 1}, nil, []int32{0, 2}},
		{"+Inf with logprobs", SamplerParams{Temperature: 1, Logprobs: true, TopLogprobs: 3}, []float32{1, inf, nan, ninf}, nil, []int32{1}},
		{"min-p above 1 leaves the best", SamplerParams{Temperature: 1, MinP: 5}, []float32{1, 3, 2, 0}, nil, []int32{1}},
		{"top-p 1e-9", SamplerParams{Temperature: 1, TopP: 1e-9}, []float32{1, 3, 2, 0}, nil, []int32{1}},
		{"top-k above vocabulary", SamplerParams{Temperature: 1, TopK: 1 << 30}, []float32{1, 3, ninf, 0}, nil, []int32{0, 1, 3}},
		{"tiny temperature", SamplerParams{Temperature: 1e-38}, []float32{1, 3, 2.9999, 0}, nil, []int32{1}},
		{"huge temperature", SamplerParams{Temperature: 3e38}, []float32{-3e38, 3e38, ninf, 0}, nil, []int32{0, 1, 3}},
		{"penalties overflow every logit", SamplerParams{Temperature: 1, RepeatPenalty: 3, PenaltyLastN: 8},
			[]float32{-2e38, -3e38, -3e38, -3e38}, []int32{0, 1, 2, 3}, nil},
		{"penalties overflow all but one", SamplerParams{RepeatPenalty: 3, PenaltyLastN: 8},
			[]float32{-2e38, -3e38, -3e38, -3e38}, []int32{1, 2, 3}, []int32{0}},
		{"frequency penalty to -Inf", SamplerParams{Temperature: 1, FrequencyPenalty: 3e38, PenaltyLastN: 8},
			[]float32{5, -3e38, 4, 1}, []int32{0, 0, 1}, []int32{2, 3}},
		{"xtc threshold 0 keeps the least likely live token", SamplerParams{Temperature: 1, XTCProbability: 1},
			[]float32{1, 2, ninf, 3}, nil, []int32{0}},
		{"typical with banned tokens", SamplerParams{Temperature: 1, TypicalP: 0.5}, []float32{ninf, 2, nan, ninf}, nil, []int32{1}},
		{"top-n-sigma with one live token", SamplerParams{Temperature: 1, TopNSigma: 1}, []float32{ninf, ninf, 7, nan}, nil, []int32{2}},
		{"mirostat 1 with banned tokens", SamplerParams{Temperature: 1, Mirostat: 1, MirostatTau: 5, MirostatEta: 0.1},
			[]float32{ninf, 2, ninf, 1}, nil, []int32{1, 3}},
		{"mirostat 2 with mu below every surprise", SamplerParams{Temperature: 1, Mirostat: 2, MirostatTau: -10, MirostatEta: 0.1},
			[]float32{0, 1, 2, 3}, nil, []int32{3}},
		{"dry on banned tokens", SamplerParams{Temperature: 1, DRYMultiplier: 1e30, DRYBase: 1e10, DRYSequenceBreakers: []string{}},
			[]float32{ninf, 1, 2, nan}, []int32{1, 2, 1, 2, 1}, []int32{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSampler(t, tt.p, len(tt.logits))
			for _, h := range tt.history {
				s.Accept(h)
			}
			for range 20 {
				got, err := s.Sample(tt.logits)
				if tt.allowed == nil {
					if !errors.Is(err, errNoToken) {
						t.Fatalf("Sample = %+v, %v; want errNoToken", got, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("Sample: %v", err)
				}
				if !contains(tt.allowed, got.Token) {
					t.Fatalf("sampled %d, want one of %v", got.Token, tt.allowed)
				}
				if !finiteLogprobs(got) {
					t.Fatalf("log-probabilities %v %v are not finite", got.Logprob, got.Top)
				}
			}
		})
	}
}

func contains(ids []int32, id int32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func finiteLogprobs(s Sampled) bool {
	ok := func(f float32) bool { return !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0) }
	for _, t := range s.Top {
		if !ok(t.Logprob) {
			return false
		}
	}
	return ok(s.Logprob)
}

// TestNewSamplerRejectsBounds checks the errors for parameters no sampler
// can work with.
func TestNewSamplerRejectsBounds(t *testing.T) {
	tests := []struct {
		name string
		p    SamplerParams
	}{
		{"penalty window above the bound", SamplerParams{RepeatPenalty: 1.1, PenaltyLastN: maxPenaltyLastN + 1}},
		{"DRY window above the bound", SamplerParams{DRYPenaltyLastN: maxPenaltyLastN + 1}},
		{"NaN typical", SamplerParams{TypicalP: nan}},
		{"Inf top-n-sigma", SamplerParams{TopNSigma: inf}},
		{"NaN XTC threshold", SamplerParams{XTCThreshold: nan}},
		{"Inf Mirostat eta", SamplerParams{Mirostat: 2, MirostatEta: inf}},
		{"Mirostat 3", SamplerParams{Mirostat: 3}},
		{"NaN DRY base", SamplerParams{DRYBase: nan}},
		{"negative DRY allowed length", SamplerParams{DRYMultiplier: 1, DRYBase: 2, DRYAllowedLength: -1}},
		{"NaN logit bias", SamplerParams{LogitBias: map[int32]float32{1: nan}}},
		{"unknown sampler", SamplerParams{Samplers: []string{"top_k", "beam"}}},
		{"infill is not a sampler here", SamplerParams{Samplers: []string{"infill"}}},
		{"too many samplers", SamplerParams{Samplers: make([]string, maxSamplerSteps+1)}},
		{"DRY breakers without token text", SamplerParams{DRYMultiplier: 1, DRYBase: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewSampler(tt.p, 8); err == nil {
				t.Errorf("NewSampler(%+v) accepted", tt.p)
			}
		})
	}
}
