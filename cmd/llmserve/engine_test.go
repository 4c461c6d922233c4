//go:build !cuda

package main

import (
	"strings"
	"testing"

	"llmserve/decode"
	"llmserve/internal/shared"
	"llmserve/model"
)

// TestOpenEngineCPUWarnings: on a build without the GPU engine, the CPU
// engine's KV settings are used as given, with no word of the GPU.
func TestOpenEngineCPUWarnings(t *testing.T) {
	f, m, err := model.Open(shared.Path(t, "models/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tests := []struct {
		name string
		c    engineConfig
	}{
		{"q8_0 keys", engineConfig{GPULayers: -1, CacheTypeK: decode.KVQ8_0}},
		{"q8_0 values", engineConfig{GPULayers: -1, CacheTypeV: decode.KVQ8_0}},
		{"kv memory", engineConfig{GPULayers: -1, KVMemory: 1 << 20}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.c.Context, tt.c.MaxSeqs, tt.c.MaxBatch, tt.c.Threads, tt.c.KVBlock = 128, 2, 64, 1, 32
			var warnings []string
			e, desc, err := openEngine(m, tt.c, func(s string) { warnings = append(warnings, s) })
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			for _, w := range warnings {
				if strings.Contains(w, "GPU") {
					t.Errorf("%s engine, warned %q", desc, w)
				}
			}
		})
	}
}
