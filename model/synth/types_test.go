package synth

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"

	"llmserve/gguf"
	"llmserve/internal/nmse"
	"llmserve/internal/shared"
)

// TestMixMatchesLlamaCpp writes models with the shape and vocabulary of the
// golden models that llama.cpp's quantizer wrote, and checks that every
// tensor gets llama.cpp's name, shape and type.
func TestMixMatchesLlamaCpp(t *testing.T) {
	for _, tt := range []struct{ arch, typ string }{
		{"llama", "Q4_K_M"}, {"llama", "Q5_K_M"}, {"llama", "Q6_K"}, {"llama", "Q8_0"}, {"llama", "Q4_0"},
		{"llama", "Q4_1"}, {"llama", "Q5_0"}, {"llama", "Q5_1"}, {"llama", "Q2_K"}, {"llama", "Q3_K_M"},
		{"llama", "F16"}, {"llama", "BF16"}, {"llama", "F32"},
		{"qwen2", "Q4_K_M"}, {"qwen2", "Q8_0"}, {"qwen2", "F32"},
	} {
		t.Run(tt.arch+"-"+tt.typ, func(t *testing.T) {
			golden, err := gguf.Open(shared.Path(t, fmt.Sprintf("golden/tiny-%s-%s.gguf", tt.arch, tt.typ)))
			if err != nil {
				t.Fatal(err)
			}
			defer golden.Close()
			cfg, _ := Shape(tt.arch, "tiny")
			cfg.setDims(256, 1, 4, 2, 64, 256, false)
			cfg.RopeScaling = nil
			var buf bytes.Buffer
			if err := Write(&buf, Options{Config: cfg, FileType: tt.typ, Seed: 1, Vocab: golden, Workers: 2}); err != nil {
				t.Fatal(err)
			}
			f, err := gguf.Parse(buf.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Tensors) != len(golden.Tensors) {
				t.Errorf("%d tensors, llama.cpp has %d", len(f.Tensors), len(golden.Tensors))
			}
			for _, want := range golden.Tensors {
				got, ok := f.Tensor(want.Name)
				if !ok {
					t.Errorf("no tensor %s", want.Name)
					continue
				}
				if got.Type != want.Type || !reflect.DeepEqual(got.Dims, want.Dims) {
					t.Errorf("%s: %s %v, llama.cpp has %s %v", want.Name, got.Type, got.Dims, want.Type, want.Dims)
				}
			}
			for _, key := range []string{"general.file_type"} {
				g, _ := golden.Uint32(key)
				if v, err := f.Uint32(key); err != nil || v != g {
					t.Errorf("%s = %d (%v), llama.cpp has %d", key, v, err, g)
				}
			}
		})
	}
}

// TestQuantizedWeights checks that each file type holds the same weights as
// the F32 model of the same seed, rounded by its type: the NMSE of every
// dequantized tensor against the F32 one stays under the type's bound.
func TestQuantizedWeights(t *testing.T) {
	cfg, _ := Shape("qwen3", "tiny")
	cfg.Layers = 1
	_, ref := writeConfig(t, cfg, "F32", 5, nil, 2)
	// Bounds for N(0, 0.02) weights, about 1.5 times what each type's
	// rounding gives them.
	bound := map[gguf.Type]float64{
		gguf.TypeF32: 0, gguf.TypeF16: 1e-7, gguf.TypeBF16: 5e-6, gguf.TypeQ8_0: 5e-5,
		gguf.TypeQ6_K: 5e-4, gguf.TypeQ5_K: 2e-3, gguf.TypeQ4_K: 8e-3, gguf.TypeQ4_0: 1.1e-2,
		gguf.TypeQ5_0: 2.8e-3, gguf.TypeQ5_1: 2.2e-3, gguf.TypeQ4_1: 9e-3, gguf.TypeQ3_K: 3.4e-2, gguf.TypeQ2_K: 0.13,
	}
	for _, typ := range FileTypes() {
		t.Run(typ, func(t *testing.T) {
			_, f := writeConfig(t, cfg, typ, 5, nil, 2)
			for i := range f.Tensors {
				ti, ri := &f.Tensors[i], &ref.Tensors[i]
				got := make([]float32, ti.Elements())
				want := make([]float32, ri.Elements())
				if err := gguf.Dequantize(ti.Type, f.TensorData(ti), got); err != nil {
					t.Fatal(err)
				}
				if err := gguf.Dequantize(ri.Type, ref.TensorData(ri), want); err != nil {
					t.Fatal(err)
				}
				b, ok := bound[ti.Type]
				if !ok {
					t.Fatalf("%s: unexpected type %s", ti.Name, ti.Type)
				}
				if e := nmse.Of(got, want); e > b {
					t.Errorf("%s (%s): NMSE %.3g against F32, want at most %.3g", ti.Name, ti.Type, e, b)
				}
			}
		})
	}
}
