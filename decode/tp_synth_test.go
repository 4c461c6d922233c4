package decode

import (
	"fmt"
	"strings"
	"testing"

	"llmserve/internal/nmse"
	"llmserve/model"
	"llmserve/model/synth"
)

// TestTPSynthKQuants splits synthetic models whose shards cut whole
// 256-value blocks (query width 512, FFN 512: 256 columns per rank at 2
// ranks), so that K-quant column slicing is exercised, and a qwen3 (per-head
// Q/K norms) and untied llama in F32 at 2 and 4 ranks.
func TestTPSynthKQuants(t *testing.T) {
	cases := []struct {
		arch, typ string
		ranks     []int
		tied      bool
	}{
		{"llama", "Q4_K_M", []int{2}, false},
		{"llama", "Q6_K", []int{2}, true},
		{"llama", "F32", []int{2, 4}, false},
		{"qwen3", "F32", []int{2, 4}, true},
		{"qwen2", "Q8_0", []int{2, 4}, false},
	}
	for _, tc := range cases {
		t.Run(tc.arch+"-"+tc.typ, func(t *testing.T) {
			cfg, err := synth.Tiny(tc.arch)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Embedding, cfg.Layers, cfg.Heads, cfg.KVHeads, cfg.HeadDim, cfg.FFN, cfg.Tied = 256, 1, 8, 4, 64, 512, tc.tied
			m := openSynth(t, cfg, tc.typ, 7)
			if strings.Contains(tc.typ, "_K") {
				for _, id := range []model.TensorID{model.AttnOut, model.FFNDown} {
					if w := m.Layers[0][id]; w.Type.BlockSize() != 256 {
						t.Fatalf("%s is %s: the test needs a column split of 256-value blocks", w.Name, w.Type)
					}
				}
			}
			prompt := []int32{1, 70, 71, 72, 45, 60, 80, 87}
			single, err := NewCPUEngine(m, CPUOptions{Context: 16})
			if err != nil {
				t.Fatal(err)
			}
			defer single.Close()
			want := forwardAll(t, single, prompt, 0)
			for _, ranks := range tc.ranks {
				t.Run(fmt.Sprintf("tp%d", ranks), func(t *testing.T) {
					e, err := NewTPCPUEngine(m, ranks, CPUOptions{Context: 16})
					if err != nil {
						t.Fatal(err)
					}
					defer e.Close()
					got := forwardAll(t, e, prompt, 0)
					d, tol := nmse.Of(got, want), tpSelfTolerance("-"+tc.typ)
					t.Logf("NMSE %.3g against the single engine (tolerance %.0e)", d, tol)
					if !(d <= tol) {
						t.Errorf("NMSE %.3g exceeds %.0e", d, tol)
					}
				})
			}
		})
	}
}
