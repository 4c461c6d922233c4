package httpapi

import (
	"testing"
)

// TestExtendedSamplersServe checks that llama.cpp's further samplers are
// served (not refused), and that a seeded request with them repeats.
func TestExtendedSamplersServe(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, params := range []string{
		`"typical_p":0.5`,
		`"top_n_sigma":1`,
		`"xtc_probability":0.5,"xtc_threshold":0.05`,
		`"mirostat":1,"mirostat_tau":3`,
		`"mirostat":2,"mirostat_eta":0.2`,
		`"dry_multiplier":0.8,"dry_allowed_length":1,"dry_sequence_breakers":[]`,
		`"samplers":["min_p","temperature","top_k"]`,
		`"samplers":"kt"`,
	} {
		t.Run(params, func(t *testing.T) {
			body := `{"prompt":"once upon","max_tokens":12,"seed":11,"ignore_eos":true,` + params + `}`
			var a, b completionResponse
			e.post(t, "/v1/completions", body, &a)
			e.post(t, "/v1/completions", body, &b)
			if len(a.Choices) != 1 || len(b.Choices) != 1 {
				t.Fatalf("choices: %d and %d, want 1", len(a.Choices), len(b.Choices))
			}
			if a.Choices[0].Text != b.Choices[0].Text {
				t.Errorf("seeded runs differ: %q vs %q", a.Choices[0].Text, b.Choices[0].Text)
			}
			if a.Usage == nil || a.Usage.CompletionTokens != 12 {
				t.Errorf("usage %+v, want 12 completion tokens", a.Usage)
			}
		})
	}
}
