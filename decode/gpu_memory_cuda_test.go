//go:build cuda

package decode

import (
	"errors"
	"strings"
	"testing"
)

// TestGPUEngineRefusesOversizedCache asks for KV caches larger than any
// device, and one whose size overflows 64 bits: each must be refused with
// needed and free bytes, before anything is allocated.
func TestGPUEngineRefusesOversizedCache(t *testing.T) {
	m := synthModel(t, "llama", "tiny", "Q8_0", false)
	for _, c := range []struct {
		name string
		opts GPUOptions
	}{
		{"4 TiB cache", GPUOptions{Context: 1 << 24, MaxSeqs: 64}},
		{"overflowing size", GPUOptions{Context: 1 << 24, MaxSeqs: 1 << 30}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := NewGPUEngine(m, c.opts)
			if err == nil {
				e.Close()
				t.Fatal("engine built")
			}
			if !errors.Is(err, errTooLarge) || strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %v, want a one-line refusal", err)
			}
			t.Log(err)
		})
	}
}
