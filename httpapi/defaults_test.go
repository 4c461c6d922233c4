package httpapi

import (
	"encoding/json"
	"testing"
)

func TestGenDefaults(t *testing.T) {
	temp, topK, topP, seed := float32(0.2), 7, float32(0.5), int64(42)
	d := GenDefaults{MaxTokens: 5, Temperature: &temp, TopK: &topK, TopP: &topP, Seed: &seed}
	tests := []struct {
		body              string
		maxTokens, topK   int
		temperature, topP float32
		seed              uint64
	}{
		{`{}`, 5, 7, 0.2, 0.5, 42},
		{`{"max_tokens": 9, "temperature": 0.9, "top_k": 3, "top_p": 0.7, "seed": 1}`, 9, 3, 0.9, 0.7, 1},
		{`{"max_completion_tokens": 11}`, 11, 7, 0.2, 0.5, 42},
		{`{"n_predict": 13}`, 13, 7, 0.2, 0.5, 42},
	}
	for _, tt := range tests {
		var g genParams
		g.preset(d)
		if err := json.Unmarshal([]byte(tt.body), &g); err != nil {
			t.Fatal(err)
		}
		r, err := g.request(limits{ctx: 256, vocab: 38, capacity: 4})
		if err != nil {
			t.Errorf("%s: %v", tt.body, err)
			continue
		}
		p := r.Sampling
		if r.MaxTokens != tt.maxTokens || p.Temperature != tt.temperature || p.TopK != tt.topK || p.TopP != tt.topP || p.Seed != tt.seed {
			t.Errorf("%s: max_tokens %d, temperature %g, top_k %d, top_p %g, seed %d; want %d, %g, %d, %g, %d",
				tt.body, r.MaxTokens, p.Temperature, p.TopK, p.TopP, p.Seed, tt.maxTokens, tt.temperature, tt.topK, tt.topP, tt.seed)
		}
	}
	// Decoding must not write through to the server's defaults.
	if temp != 0.2 || topK != 7 || topP != 0.5 || seed != 42 {
		t.Errorf("the defaults changed: %g %d %g %d", temp, topK, topP, seed)
	}
	// The zero value keeps llama.cpp's defaults.
	var g genParams
	g.preset(GenDefaults{})
	r, err := g.request(limits{ctx: 256, vocab: 38, capacity: 4})
	if err != nil || r.MaxTokens != 0 || r.Sampling.Temperature != defaultTemperature || r.Sampling.TopK != defaultTopK || r.Sampling.TopP != defaultTopP {
		t.Errorf("zero defaults: %+v, %v", r, err)
	}
}
