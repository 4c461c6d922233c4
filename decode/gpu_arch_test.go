//go:build cuda

package decode

import (
	"errors"
	"strings"
	"testing"

	"llmserve/model"
)

// TestGPUSupports (no device needed, so not in a _cuda_test file that
// is skipped without one) checks which passes the GPU engine accepts: the llama
// family runs, gemma2, phi3 and the expert mixture are refused with
// ErrUnsupported (the binary then falls back to the CPU engine).
func TestGPUSupports(t *testing.T) {
	cases := []struct {
		rel  string
		want string // "" = supported, else a word of the refusal
	}{
		{"golden/tiny-llama-Q8_0.gguf", ""},
		{"golden/tiny-qwen2-Q8_0.gguf", ""},
		{"golden-arch/tiny-gemma2-Q8_0.gguf", "inp_scaled"},
		{"golden-arch/tiny-phi3-Q8_0.gguf", "wqkv"},
		{"golden-arch/tiny-mixtral-Q8_0.gguf", "ffn_moe_out"},
	}
	for _, c := range cases {
		err := gpuSupports(loadModel(t, c.rel))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.rel, err)
		case c.want != "" && (!errors.Is(err, model.ErrUnsupported) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: err = %v, want ErrUnsupported naming %q", c.rel, err, c.want)
		}
	}
}
