package httpapi

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"llmserve/decode"
)

// TestSamplingFields checks that each field lands in its SamplerParams
// field, with llama.cpp's defaults for the absent ones.
func TestSamplingFields(t *testing.T) {
	lim := limits{ctx: 256, vocab: 38, capacity: 4}
	defaults := func() decode.SamplerParams {
		return decode.SamplerParams{
			Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, RepeatPenalty: 1, PenaltyLastN: 64,
			TypicalP: 1, TopNSigma: -1, XTCThreshold: 0.1, MirostatTau: 5, MirostatEta: 0.1,
			DRYBase: 1.75, DRYAllowedLength: 2, DRYPenaltyLastN: -1, DRYSequenceBreakers: []string{"\n", ":", "\"", "*"},
			Seed: 7,
		}
	}
	tests := []struct {
		name, body string
		chat       bool
		want       func(p *decode.SamplerParams)
		maxTokens  int
	}{
		{"defaults", `{}`, false, func(p *decode.SamplerParams) {}, 0},
		{"repeat_last_n -1 is the context", `{"repeat_last_n":-1}`, false, func(p *decode.SamplerParams) { p.PenaltyLastN = 256 }, 0},
		{"repeat_last_n 0", `{"repeat_last_n":0}`, false, func(p *decode.SamplerParams) { p.PenaltyLastN = 0 }, 0},
		{"top_p 0 is top_k 1", `{"top_p":0,"top_k":10}`, false, func(p *decode.SamplerParams) { p.TopK, p.TopP = 1, 1 }, 0},
		{"top_p and top_k", `{"top_p":0.5,"top_k":38}`, false, func(p *decode.SamplerParams) { p.TopK, p.TopP = 38, 0.5 }, 0},
		{"typical_p", `{"typical_p":0.5}`, false, func(p *decode.SamplerParams) { p.TypicalP = 0.5 }, 0},
		{"mirostat", `{"mirostat":2,"mirostat_tau":3,"mirostat_eta":0.25}`, false, func(p *decode.SamplerParams) {
			p.Mirostat, p.MirostatTau, p.MirostatEta = 2, 3, 0.25
		}, 0},
		{"dry", `{"dry_multiplier":0.8,"dry_base":2,"dry_allowed_length":3,"dry_penalty_last_n":100,"dry_sequence_breakers":["x"]}`, false, func(p *decode.SamplerParams) {
			p.DRYMultiplier, p.DRYBase, p.DRYAllowedLength, p.DRYPenaltyLastN, p.DRYSequenceBreakers = 0.8, 2, 3, 100, []string{"x"}
		}, 0},
		{"dry window 0 turns DRY off", `{"dry_multiplier":0.8,"dry_penalty_last_n":0}`, false, func(p *decode.SamplerParams) { p.DRYPenaltyLastN = 0 }, 0},
		{"xtc", `{"xtc_probability":0.5,"xtc_threshold":0.2}`, false, func(p *decode.SamplerParams) { p.XTCProbability, p.XTCThreshold = 0.5, 0.2 }, 0},
		{"top_n_sigma", `{"top_n_sigma":1.5}`, false, func(p *decode.SamplerParams) { p.TopNSigma = 1.5 }, 0},
		{"samplers letters", `{"samplers":"kypmxt"}`, false, func(p *decode.SamplerParams) {
			p.Samplers = []string{"top_k", "typ_p", "top_p", "min_p", "xtc", "temperature"}
		}, 0},
		{"samplers names", `{"samplers":["Top-K","typical","nucleus","temp","penalties","dry"]}`, false, func(p *decode.SamplerParams) {
			p.Samplers = []string{"top_k", "typ_p", "top_p", "temperature", "penalties", "dry"}
		}, 0},
		{"logit_bias forms", `{"logit_bias":[[3,-5.5],[4,false]]}`, false, func(p *decode.SamplerParams) {
			p.LogitBias = map[int32]float32{3: -5.5, 4: float32(math.Inf(-1))}
		}, 0},
		{"logit_bias object", `{"logit_bias":{"37":100,"0":false}}`, false, func(p *decode.SamplerParams) {
			p.LogitBias = map[int32]float32{37: 100, 0: float32(math.Inf(-1))}
		}, 0},
		{"n_probs", `{"n_probs":3}`, false, func(p *decode.SamplerParams) { p.Logprobs, p.TopLogprobs = true, 3 }, 0},
		{"completion logprobs", `{"logprobs":2}`, false, func(p *decode.SamplerParams) { p.Logprobs, p.TopLogprobs = true, 2 }, 0},
		{"chat logprobs", `{"logprobs":true,"top_logprobs":4}`, true, func(p *decode.SamplerParams) { p.Logprobs, p.TopLogprobs = true, 4 }, 0},
		{"penalties", `{"presence_penalty":-2,"frequency_penalty":2,"repeat_penalty":1.3,"min_p":0,"temperature":0}`, false, func(p *decode.SamplerParams) {
			p.PresencePenalty, p.FrequencyPenalty, p.RepeatPenalty, p.MinP, p.Temperature = -2, 2, 1.3, 0, 0
		}, 0},
		{"n_predict", `{"n_predict":9}`, false, func(p *decode.SamplerParams) {}, 9},
		{"n_predict -1", `{"n_predict":-1}`, false, func(p *decode.SamplerParams) {}, 0},
		{"max_completion_tokens first", `{"max_completion_tokens":3,"max_tokens":5,"n_predict":7}`, true, func(p *decode.SamplerParams) {}, 3},
		{"max_tokens before n_predict", `{"max_tokens":5,"n_predict":7}`, false, func(p *decode.SamplerParams) {}, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var g genParams
			if err := json.Unmarshal([]byte(tt.body), &g); err != nil {
				t.Fatal(err)
			}
			seed := int64(7)
			g.Seed = &seed
			lim := lim
			lim.chat = tt.chat
			r, err := g.request(lim)
			if err != nil {
				t.Fatal(err)
			}
			want := defaults()
			tt.want(&want)
			if !reflect.DeepEqual(r.Sampling, want) {
				t.Errorf("sampling\n got %+v\nwant %+v", r.Sampling, want)
			}
			if r.MaxTokens != tt.maxTokens {
				t.Errorf("max tokens %d, want %d", r.MaxTokens, tt.maxTokens)
			}
		})
	}
}
