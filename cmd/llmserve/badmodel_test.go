package main

import (
	"math"
	"strings"
	"testing"

	"llmserve/gguf"
	"llmserve/internal/servertest"
	"llmserve/model/synth"
)

func TestMain(m *testing.M) { servertest.Main(m) }

// errorLines drops the JSON log records serve writes (it listens before it
// loads, to answer health checks) and returns the other lines of stderr.
func errorLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimRight(stderr, "\n"), "\n") {
		if !strings.HasPrefix(l, "{") {
			out = append(out, l)
		}
	}
	return out
}

// TestBadModelExits checks that serve, generate and inspect refuse a
// malformed model with exit status 1 and one error line on stderr, before
// any request could reach it.
func TestBadModelExits(t *testing.T) {
	f32 := func(v float32) gguf.Value { return gguf.Value{Type: gguf.ValueFloat32, V: v} }
	files := []struct {
		name string
		edit func(r *synth.Raw)
		want string
	}{
		{"NaN epsilon", func(r *synth.Raw) { r.Set("llama.attention.layer_norm_rms_epsilon", f32(float32(math.NaN()))) }, "epsilon"},
		{"rope base -1", func(r *synth.Raw) { r.Set("llama.rope.freq_base", f32(-1)) }, "rope frequency base"},
		{"token_embd [32, 2^56]", func(r *synth.Raw) { r.Tensor("token_embd.weight").Dims = []uint64{32, 1 << 56} }, "token_embd.weight"},
		{"norm of type F16", func(r *synth.Raw) { r.Tensor("output_norm.weight").Type = gguf.TypeF16 }, "want F32"},
	}
	bin := servertest.Build(t)
	for _, f := range files {
		path := writeTinyModel(t, f.edit)
		for _, args := range [][]string{
			{"serve", "--model", path, "--port", "0"},
			{"inspect", path},
			{"generate", "-m", path, "-n", "1"},
		} {
			code, stderr := servertest.Run(t, bin, args...)
			lines := errorLines(stderr)
			if code != 1 || len(lines) != 1 || !strings.Contains(lines[0], f.want) {
				t.Errorf("%s: llmserve %s: exit %d, stderr %q; want exit 1 and one line about %q", f.name, args[0], code, stderr, f.want)
			}
		}
	}
}
