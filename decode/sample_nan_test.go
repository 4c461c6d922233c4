package decode

import (
	"math"
	"testing"
)

// TestSamplerNonFiniteLogits samples rows holding NaN and infinities, as a
// model whose weights decode to NaN produces, with every filter: each draw
// must give a token inside the vocabulary or an error, never a panic
// (min-p used to filter out every candidate when the maximum was NaN).
func TestSamplerNonFiniteLogits(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	params := []SamplerParams{
		{Temperature: 0},
		{Temperature: 0.8, TopK: 40, TopP: 0.9, MinP: 0.05, Seed: 1},
		{Temperature: 1, Seed: 2},
		{Temperature: 1, TopK: 2, Seed: 3},
		{Temperature: 1, TopP: 0.5, Seed: 3},
		{Temperature: 1, MinP: 0.5, Seed: 3},
		{Temperature: 1, RepeatPenalty: 1.1, PenaltyLastN: 4, Seed: 3},
		{Temperature: 1, Logprobs: true, TopLogprobs: 2, Seed: 3},
	}
	rows := [][]float32{{nan, nan, nan}, {1, nan, 2}, {nan, 1, 2}, {inf, 0, -inf}, {-inf, -inf, -inf}, {inf, inf, 1}}
	for _, p := range params {
		for _, row := range rows {
			s, err := NewSampler(p, len(row))
			if err != nil {
				t.Fatal(err)
			}
			for draw := 0; draw < 3; draw++ {
				got, err := s.Sample(append([]float32(nil), row...))
				if err == nil && (got.Token < 0 || int(got.Token) >= len(row)) {
					t.Errorf("%+v on %v: token %d outside the vocabulary of %d", p, row, got.Token, len(row))
				}
			}
		}
	}
}
