package decode

import (
	"fmt"
	"math"
)

// samplerStep is one step of the truncating chain.
type samplerStep int

const (
	stepPenalties samplerStep = iota
	stepDRY
	stepTopNSigma
	stepTopK
	stepTypical
	stepTopP
	stepMinP
	stepXTC
	stepTemperature
)

// defaultOrder is llama.cpp's default chain (common_params_sampling).
var defaultOrder = []samplerStep{stepPenalties, stepDRY, stepTopNSigma, stepTopK, stepTypical, stepTopP, stepMinP, stepXTC, stepTemperature}

// stepNames maps llama.cpp's sampler names, canonical and alternative, to steps.
var stepNames = map[string]samplerStep{
	"penalties": stepPenalties, "dry": stepDRY, "top_k": stepTopK, "top-k": stepTopK,
	"typ_p": stepTypical, "typical_p": stepTypical, "typical-p": stepTypical, "typical": stepTypical,
	"typ-p": stepTypical, "typ": stepTypical, "top_p": stepTopP, "top-p": stepTopP, "nucleus": stepTopP,
	"min_p": stepMinP, "min-p": stepMinP, "xtc": stepXTC, "temperature": stepTemperature, "temp": stepTemperature,
	"top_n_sigma": stepTopNSigma, "top-n-sigma": stepTopNSigma,
}

// parseOrder turns SamplerParams.Samplers into steps; nil gives the
// default order. Like llama.cpp, a sampler left out of the list does not
// run (without "temperature" the logits are not scaled) and one named
// twice runs twice.
func parseOrder(names []string) ([]samplerStep, error) {
	if names == nil {
		return defaultOrder, nil
	}
	if len(names) > maxSamplerSteps {
		return nil, fmt.Errorf("sampler: %d samplers named, at most %d", len(names), maxSamplerSteps)
	}
	order := make([]samplerStep, 0, len(names))
	for _, n := range names {
		st, ok := stepNames[n]
		if !ok {
			return nil, fmt.Errorf("sampler: unknown sampler %q (known: penalties, dry, top_n_sigma, top_k, typ_p, top_p, min_p, xtc, temperature)", n)
		}
		order = append(order, st)
	}
	return order, nil
}

// checkParams rejects parameters no sampler can work with: numbers that
// are not finite, negative penalties, windows beyond maxPenaltyLastN, an
// unknown Mirostat version.
func checkParams(p SamplerParams) error {
	if p.TopLogprobs < 0 || p.TopLogprobs > MaxTopLogprobs {
		return fmt.Errorf("sampler: top_logprobs %d outside 0..%d", p.TopLogprobs, MaxTopLogprobs)
	}
	for _, f := range []struct {
		name string
		v    float32
	}{
		{"temperature", p.Temperature}, {"top_p", p.TopP}, {"min_p", p.MinP},
		{"repeat_penalty", p.RepeatPenalty}, {"presence_penalty", p.PresencePenalty},
		{"frequency_penalty", p.FrequencyPenalty}, {"typical_p", p.TypicalP}, {"top_n_sigma", p.TopNSigma},
		{"xtc_probability", p.XTCProbability}, {"xtc_threshold", p.XTCThreshold},
		{"mirostat_tau", p.MirostatTau}, {"mirostat_eta", p.MirostatEta},
		{"dry_multiplier", p.DRYMultiplier}, {"dry_base", p.DRYBase},
	} {
		if math.IsNaN(float64(f.v)) || math.IsInf(float64(f.v), 0) {
			return fmt.Errorf("sampler: %s %v is not a finite number", f.name, f.v)
		}
	}
	switch {
	case p.RepeatPenalty < 0:
		return fmt.Errorf("sampler: repeat penalty %v is negative", p.RepeatPenalty)
	case p.PenaltyLastN > maxPenaltyLastN:
		return fmt.Errorf("sampler: penalty_last_n %d is above %d", p.PenaltyLastN, maxPenaltyLastN)
	case p.DRYPenaltyLastN > maxPenaltyLastN:
		return fmt.Errorf("sampler: dry_penalty_last_n %d is above %d", p.DRYPenaltyLastN, maxPenaltyLastN)
	case p.Mirostat < 0 || p.Mirostat > 2:
		return fmt.Errorf("sampler: mirostat %d is not 0, 1 or 2", p.Mirostat)
	case dryActive(p) && (p.DRYAllowedLength < 0 || p.DRYAllowedLength > maxPenaltyLastN):
		return fmt.Errorf("sampler: dry_allowed_length %d outside 0..%d", p.DRYAllowedLength, maxPenaltyLastN)
	case len(p.DRYSequenceBreakers) > maxDRYBreakers:
		return fmt.Errorf("sampler: %d DRY sequence breakers, at most %d", len(p.DRYSequenceBreakers), maxDRYBreakers)
	}
	return nil
}

// xtcActive reports whether XTC can remove tokens (llama.cpp: a positive
// probability and a threshold of at most 0.5).
func xtcActive(p SamplerParams) bool {
	return p.XTCProbability > 0 && p.XTCThreshold <= 0.5
}
