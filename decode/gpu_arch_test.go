//go:build cuda

package decode

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"llmserve/model"
)

// TestGPUSupports (no device needed, so not in a _cuda_test file that
// is skipped without one) checks which passes the GPU engine accepts and
// which path runs them: the llama family on the fused layer, gemma2, phi3
// (with LongRoPE too) and the expert mixture on the executor of the
// description; passes
// neither takes are refused with ErrUnsupported (the binary then falls
// back to the CPU engine).
func TestGPUSupports(t *testing.T) {
	cases := []struct {
		rel       string
		fusedWhy  string // "" = the fused layer takes it, else a word of its refusal
		tamper    func(m *model.Model)
		refuseWhy string // "" = supported, else a word of the refusal
		ownBufs   bool   // the executor allocates buffers of its own (fused products, experts)
	}{
		{rel: "golden/tiny-llama-Q8_0.gguf"},
		{rel: "golden/tiny-qwen2-Q8_0.gguf"},
		{rel: "golden-arch/tiny-gemma2-Q8_0.gguf", fusedWhy: "inp_scaled"},
		{rel: "golden-arch/tiny-phi3-Q8_0.gguf", fusedWhy: "wqkv", ownBufs: true},
		{rel: "golden-arch/tiny-mixtral-Q8_0.gguf", fusedWhy: "ffn_moe_out", ownBufs: true},
		{rel: "golden-arch/tiny-phi3-F32.gguf", fusedWhy: "LongRoPE", ownBufs: true,
			tamper: func(m *model.Model) { m.RopeAttnFactor = 1.2 }},
		{rel: "golden-arch/tiny-mixtral-F32.gguf", fusedWhy: "ffn_moe_out", refuseWhy: "experts per token",
			tamper: func(m *model.Model) {
				for _, b := range m.Graph.Blocks {
					for i := range b {
						if b[i].Op == model.OpMoE {
							b[i].Used = m.Experts + 1
						}
					}
				}
			}},
		{rel: "golden-arch/tiny-gemma2-F32.gguf", fusedWhy: "inp_scaled", refuseWhy: "not right before the attention",
			tamper: func(m *model.Model) {
				// Move block 0's Q rotation ahead of the K product.
				b := m.Graph.Blocks[0]
				q := slices.IndexFunc(b, func(s model.Step) bool { return s.Op == model.OpRope })
				rope := b[q]
				b = slices.Delete(b, q, q+1)
				b = slices.Insert(b, q-1, rope)
				m.Graph.Blocks[0] = b
			}},
		{rel: "golden-arch/tiny-gemma2-F32.gguf", fusedWhy: "inp_scaled", refuseWhy: "K read after the attention",
			tamper: func(m *model.Model) {
				b := m.Graph.Blocks[1]
				at := slices.IndexFunc(b, func(s model.Step) bool { return s.Op == model.OpAttention })
				m.Graph.Blocks[1] = slices.Insert(b, at+1, model.Step{Op: model.OpScale, Name: "k_again", In: model.BufK, Out: model.BufK, Scale: 2})
			}},
		{rel: "golden-arch/tiny-gemma2-F32.gguf", fusedWhy: "inp_scaled", refuseWhy: "output step",
			tamper: func(m *model.Model) {
				m.Graph.Output = append(m.Graph.Output, model.Step{Op: model.OpAdd, Name: "extra", In: model.BufRows, Out: model.BufLogits})
			}},
	}
	for _, c := range cases {
		m := loadModel(t, c.rel)
		if c.tamper != nil {
			// A copy of the description, so the cached model stays as loaded.
			mc := *m
			mc.Graph.Blocks = make([][]model.Step, len(m.Graph.Blocks))
			for i, b := range m.Graph.Blocks {
				mc.Graph.Blocks[i] = slices.Clone(b)
			}
			mc.Graph.Output = slices.Clone(m.Graph.Output)
			c.tamper(&mc)
			m = &mc
		}
		fused := gpuFuses(m)
		switch {
		case c.fusedWhy == "" && fused != nil:
			t.Errorf("%s: the fused layer refuses it: %v", c.rel, fused)
		case c.fusedWhy != "" && (!errors.Is(fused, model.ErrUnsupported) || !strings.Contains(fused.Error(), c.fusedWhy)):
			t.Errorf("%s: fused layer err = %v, want ErrUnsupported naming %q", c.rel, fused, c.fusedWhy)
		}
		err := gpuSupports(m)
		switch {
		case c.refuseWhy == "" && err != nil:
			t.Errorf("%s: refused: %v", c.rel, err)
		case c.refuseWhy != "" && (!errors.Is(err, model.ErrUnsupported) || !strings.Contains(err.Error(), c.refuseWhy)):
			t.Errorf("%s: err = %v, want ErrUnsupported naming %q", c.rel, err, c.refuseWhy)
		}
		if w := gpuExecWidth(m, false); c.refuseWhy == "" && (w > 0) != c.ownBufs {
			t.Errorf("%s: executor buffers of %d values per row, want some: %v", c.rel, w, c.ownBufs)
		}
	}
}

// TestTPGPURefusesWithoutPreview (no device needed): the tensor-parallel
// engine has not run on a device yet, so without the preview it refuses
// before it touches a GPU, naming the variable that enables it.
func TestTPGPURefusesWithoutPreview(t *testing.T) {
	t.Setenv("LLMSERVE_GPU_PREVIEW", "")
	_, err := NewTPGPUEngine(loadModel(t, "golden/tiny-llama-F32.gguf"), TPGPUOptions{Ranks: 2})
	if !errors.Is(err, model.ErrUnsupported) || !strings.Contains(err.Error(), "LLMSERVE_GPU_PREVIEW") {
		t.Errorf("NewTPGPUEngine without preview: err = %v, want ErrUnsupported naming LLMSERVE_GPU_PREVIEW", err)
	}
}
