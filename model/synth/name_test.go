package synth

import (
	"bytes"
	"math"
	"reflect"
	"strings"
	"testing"

	"llmserve/gguf"
)

// TestNamesAvoidPhi3Quirks checks that no shape of any architecture (nor
// the Tiny micro shape) is named so that llama.cpp applies Phi-3's token
// attributes: with the Llama 3 or built-in vocabulary, which lack </s>,
// <unk>, <s> and <|endoftext|>, llama.cpp refuses such a file
// ("error loading model vocabulary: unordered_map::at").
func TestNamesAvoidPhi3Quirks(t *testing.T) {
	vocab, err := BuiltinVocab()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, arch := range Arches {
		cfgs := []Config{}
		for _, shape := range Shapes[arch] {
			c, err := Shape(arch, shape)
			if err != nil {
				t.Fatal(err)
			}
			cfgs = append(cfgs, c)
		}
		micro, err := Tiny(arch)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range append(cfgs, micro) {
			lower := strings.ToLower(c.Name)
			for _, m := range phi3NameMarks {
				if strings.Contains(lower, m) {
					t.Errorf("%s: general.name %q contains %q", arch, c.Name, m)
				}
			}
			if err := checkNameQuirks(c.Name, vocab); err != nil {
				t.Errorf("%s: %v", arch, err)
			}
			if seen[c.Name] {
				t.Errorf("%s: general.name %q is not unique", arch, c.Name)
			}
			seen[c.Name] = true
		}
	}
}

// vocabWith returns the built-in vocabulary with extra tokens appended.
func vocabWith(t *testing.T, extra ...string) *gguf.File {
	t.Helper()
	base, err := BuiltinVocab()
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := base.Strings("tokenizer.ggml.tokens")
	if err != nil {
		t.Fatal(err)
	}
	types := make([]int32, len(tokens), len(tokens)+len(extra))
	for i := range types {
		types[i] = 1
	}
	for range extra {
		types = append(types, 3)
	}
	var buf bytes.Buffer
	w := gguf.NewWriter(&buf)
	w.SetString("tokenizer.ggml.model", "gpt2")
	w.SetStrings("tokenizer.ggml.tokens", append(tokens, extra...))
	w.SetInt32s("tokenizer.ggml.token_type", types)
	w.SetStrings("tokenizer.ggml.merges", []string{})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestWritePhi3NameNeedsPhi3Tokens checks that Write refuses a model whose
// name selects llama.cpp's Phi-3 token attributes when the vocabulary lacks
// a token they look up, and writes it when the vocabulary has them all.
func TestWritePhi3NameNeedsPhi3Tokens(t *testing.T) {
	all := vocabWith(t, phi3Tokens...)
	noEOT := vocabWith(t, "</s>", "<unk>", "<s>")
	for _, tc := range []struct {
		name    string
		vocab   *gguf.File // nil: BuiltinVocab
		missing string     // the token the error names, "" for success
	}{
		{"synth-phi3-micro", nil, "</s>"},
		{"Phi-3 mini", nil, "</s>"},
		{"synth-PHI3-micro", noEOT, "<|endoftext|>"},
		{"synth-phi3-micro", all, ""},
		{"synth Phi 3.5 micro", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Tiny("phi3")
			if err != nil {
				t.Fatal(err)
			}
			cfg.Name = tc.name
			var buf bytes.Buffer
			err = Write(&buf, Options{Config: cfg, FileType: "F32", Seed: 1, Vocab: tc.vocab, Workers: 1})
			switch {
			case tc.missing == "" && err != nil:
				t.Fatalf("Write: %v", err)
			case tc.missing != "" && (err == nil || !strings.Contains(err.Error(), "\""+tc.missing+"\"")):
				t.Fatalf("Write: error %v, want one naming %q", err, tc.missing)
			case tc.missing == "":
				f, err := gguf.Parse(buf.Bytes())
				if err != nil {
					t.Fatal(err)
				}
				if got, _ := f.String("general.name"); got != tc.name {
					t.Errorf("general.name %q, want %q", got, tc.name)
				}
			}
		})
	}
}

// TestPhi3MiniLayout checks the LongRoPE keys and tensors of phi3 mini
// against those llama.cpp's converter writes for Phi-3.5-mini-instruct
// (Phi3MiniModel: context 131072 over an original 4096, attention factor
// √(1 + ln 32 / ln 4096), sliding window 262144, rope_factors_long/short
// of head_dim/2 = 48 float32 values), without writing its weights.
func TestPhi3MiniLayout(t *testing.T) {
	cfg, err := Shape("phi3", "mini")
	if err != nil {
		t.Fatal(err)
	}
	const nVocab = 32064
	var buf bytes.Buffer
	w := gguf.NewWriter(&buf)
	setMetadata(w, &cfg, 7, nVocab)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]uint32{
		"phi3.context_length":                       131072,
		"phi3.rope.scaling.original_context_length": 4096,
		"phi3.attention.sliding_window":             262144,
		"phi3.rope.dimension_count":                 96,
		"phi3.attention.head_count_kv":              32,
		"phi3.block_count":                          32,
	} {
		if got, err := f.Uint32(key); err != nil || got != want {
			t.Errorf("%s = %d (%v), want %d", key, got, err, want)
		}
	}
	wantAttn := math.Sqrt(1 + math.Log(32)/math.Log(4096))
	if got, err := f.Float32("phi3.rope.scaling.attn_factor"); err != nil || math.Abs(float64(got)-wantAttn) > 1e-6 {
		t.Errorf("phi3.rope.scaling.attn_factor = %g (%v), want %g", got, err, wantAttn)
	}
	name, _ := f.String("general.name")
	for _, m := range phi3NameMarks {
		if strings.Contains(strings.ToLower(name), m) {
			t.Errorf("general.name %q contains %q", name, m)
		}
	}

	specs, err := cfg.tensors(nVocab)
	if err != nil {
		t.Fatal(err)
	}
	types, err := tensorTypes("Q4_K_M", &cfg, specs)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for i, s := range specs {
		if s.name != "rope_factors_long.weight" && s.name != "rope_factors_short.weight" {
			continue
		}
		found++
		if !reflect.DeepEqual(s.dims, []int64{48}) || types[i] != gguf.TypeF32 {
			t.Errorf("%s: %v %v, want [48] F32", s.name, s.dims, types[i])
		}
	}
	if found != 2 {
		t.Errorf("%d rope factor tensors, want 2", found)
	}
}
