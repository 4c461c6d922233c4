package synth

import (
	"fmt"
	"reflect"
	"testing"

	"llmserve/model"
)

// TestTinyArchLayouts checks the tensors and the architecture keys of the
// tiny gemma2, phi3 and mixtral models against llama.cpp's layout of each,
// written out here independently of the tensor table, and that the model
// loader reads the same hyperparameters back.
func TestTinyArchLayouts(t *testing.T) {
	for _, arch := range []string{"gemma2", "phi3", "mixtral"} {
		t.Run(arch, func(t *testing.T) {
			cfg, _ := Shape(arch, "tiny")
			_, f := writeTiny(t, arch, "F32", 1, nil, 2)
			e, q, kv, ffn, v := int64(cfg.Embedding), int64(cfg.Heads*cfg.HeadDim), int64(cfg.KVHeads*cfg.HeadDim), int64(cfg.FFN), int64(256+len(builtinSpecials))
			want := map[string][]int64{"token_embd.weight": {e, v}, "output_norm.weight": {e}}
			if !cfg.Tied {
				want["output.weight"] = []int64{e, v}
			}
			keys := map[string]float64{}
			for l := range cfg.Layers {
				b := fmt.Sprintf("blk.%d.", l)
				add := func(name string, dims ...int64) { want[b+name] = dims }
				add("attn_norm.weight", e)
				add("attn_output.weight", q, e)
				add("ffn_norm.weight", e)
				switch arch {
				case "gemma2":
					add("attn_q.weight", e, q)
					add("attn_k.weight", e, kv)
					add("attn_v.weight", e, kv)
					add("post_attention_norm.weight", e)
					add("ffn_gate.weight", e, ffn)
					add("ffn_up.weight", e, ffn)
					add("ffn_down.weight", ffn, e)
					add("post_ffw_norm.weight", e)
					keys = map[string]float64{"gemma2.attn_logit_softcapping": 50, "gemma2.final_logit_softcapping": 30, "gemma2.attention.sliding_window": 64}
				case "phi3":
					add("attn_qkv.weight", e, q+2*kv)
					add("ffn_up.weight", e, 2*ffn)
					add("ffn_down.weight", ffn, e)
					keys = map[string]float64{"phi3.attention.sliding_window": 2047}
				case "mixtral":
					x := int64(cfg.Experts)
					add("attn_q.weight", e, q)
					add("attn_k.weight", e, kv)
					add("attn_v.weight", e, kv)
					add("ffn_gate_inp.weight", e, x)
					add("ffn_gate_exps.weight", e, ffn, x)
					add("ffn_up_exps.weight", e, ffn, x)
					add("ffn_down_exps.weight", ffn, e, x)
					keys = map[string]float64{"llama.expert_count": 4, "llama.expert_used_count": 2}
				}
			}
			if len(f.Tensors) != len(want) {
				t.Errorf("%d tensors, want %d", len(f.Tensors), len(want))
			}
			for _, ti := range f.Tensors {
				if dims, ok := want[ti.Name]; !ok || !reflect.DeepEqual(ti.Dims, dims) {
					t.Errorf("tensor %s %v, want %v (present: %v)", ti.Name, ti.Dims, dims, ok)
				}
			}
			for key, w := range keys {
				var got float64
				if u, err := f.Uint32(key); err == nil {
					got = float64(u)
				} else if fl, err := f.Float32(key); err == nil {
					got = float64(fl)
				} else {
					t.Errorf("%s: %v", key, err)
					continue
				}
				if got != w {
					t.Errorf("%s = %g, want %g", key, got, w)
				}
			}
			m, err := model.Load(f)
			if err != nil {
				t.Fatalf("model.Load: %v", err)
			}
			if m.Experts != cfg.Experts || m.SlidingWindow != cfg.SlidingWindow || m.AttnSoftcap != cfg.AttnSoftcap || m.FinalSoftcap != cfg.FinalSoftcap {
				t.Errorf("loaded experts %d, window %d, soft-caps %g/%g; want %d, %d, %g/%g", m.Experts, m.SlidingWindow, m.AttnSoftcap, m.FinalSoftcap,
					cfg.Experts, cfg.SlidingWindow, cfg.AttnSoftcap, cfg.FinalSoftcap)
			}
		})
	}
}

// TestRealShapeSizes checks the parameter counts the real shapes imply
// against the published sizes of the models they copy (within 3%, the
// vocabulary taken as the real one's).
func TestRealShapeSizes(t *testing.T) {
	cases := []struct {
		arch, shape string
		vocab       int
		params      float64 // published parameter count
	}{
		{"gemma2", "2b", 256000, 2.61e9},
		{"gemma2", "9b", 256000, 9.24e9},
		{"phi3", "mini", 32064, 3.82e9},
		{"mixtral", "8x7b", 32000, 46.7e9},
	}
	for _, c := range cases {
		cfg, err := Shape(c.arch, c.shape)
		if err != nil {
			t.Fatal(err)
		}
		specs, err := cfg.tensors(c.vocab)
		if err != nil {
			t.Fatal(err)
		}
		var n float64
		for _, s := range specs {
			n += float64(s.rows() * s.rowLen())
		}
		if r := n / c.params; r < 0.97 || r > 1.03 {
			t.Errorf("%s %s: %.4g parameters, the real model has %.4g", c.arch, c.shape, n, c.params)
		}
	}
}
