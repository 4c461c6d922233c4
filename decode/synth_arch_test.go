package decode

import (
	"math"
	"testing"

	"llmserve/internal/nmse"
	"llmserve/model"
	"llmserve/model/synth"
)

// TestSynthArchsRun writes a tiny synthetic model of every synth
// architecture, F32 and Q8_0, loads it and checks that a prompt run in one
// batch and the same prompt fed one token per step give the same finite
// logits (the sliding window made shorter than the prompt, so that it
// matters, and phi3 given LongRoPE factors).
func TestSynthArchsRun(t *testing.T) {
	for _, arch := range synth.Arches {
		for _, typ := range []string{"F32", "Q8_0"} {
			t.Run(arch+"-"+typ, func(t *testing.T) {
				cfg, err := synth.Tiny(arch)
				if err != nil {
					t.Fatal(err)
				}
				if cfg.SlidingWindow > 0 {
					cfg.SlidingWindow = 3
				}
				if arch == "phi3" { // LongRoPE, the long factors in use at context 16
					cfg.LongRope = &synth.LongRopeScaling{Factor: 4, OriginalContext: 8}
				}
				m := openSynth(t, cfg, typ, 5)
				if long := m.Tensors[model.RopeFactorsLong] != nil; long != (cfg.LongRope != nil) || (long && m.RopeAttnFactor == 1) {
					t.Errorf("rope_factors_long loaded = %v, attention factor %g; LongRoPE set = %v", long, m.RopeAttnFactor, cfg.LongRope != nil)
				}
				prompt := []int32{1, 70, 71, 72, 45, 60, 80, 87}
				batched := forwardAll(t, newEngine(t, m), prompt, 0)
				e := newEngine(t, m)
				V := e.VocabSize()
				row := make([]float32, V)
				for i, tok := range prompt {
					var b Batch
					b.Add(tok, int32(i), 0, true)
					if err := e.Forward(&b, row); err != nil {
						t.Fatal(err)
					}
					want := batched[i*V : (i+1)*V]
					for _, v := range row {
						if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
							t.Fatalf("token %d: logit %g", i, v)
						}
					}
					if d := nmse.Of(row, want); d > 1e-10 {
						t.Errorf("token %d: NMSE %.3g between one step per token and one batch", i, d)
					}
				}
			})
		}
	}
}

func newEngine(t *testing.T, m *model.Model) *CPUEngine {
	t.Helper()
	e, err := NewCPUEngine(m, CPUOptions{Context: 16})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}
