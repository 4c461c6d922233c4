package tokenizer

import (
	"slices"
	"testing"

	"llmserve/internal/shared"
)

// TestSpecialTokens checks that control tokens are taken whole from the text
// only with parseSpecial, and that the text between them is encoded as it
// would be alone.
func TestSpecialTokens(t *testing.T) {
	tests := []struct {
		vocab   string
		text    string
		special []string // the control tokens in text, in order
		parts   []string // the text around them
	}{
		{"ggml-vocab-llama-bpe.gguf", "<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>",
			[]string{"<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"}, []string{"", "user", "\n\nHi!", ""}},
		{"ggml-vocab-qwen2.gguf", "<|im_start|>system\nBe brief.<|im_end|>\n",
			[]string{"<|im_start|>", "<|im_end|>"}, []string{"", "system\nBe brief.", "\n"}},
	}
	for _, tc := range tests {
		tok := loadVocab(t, tc.vocab)
		var want []int32
		for i, part := range tc.parts {
			ids, _ := tok.Encode(part, false, false)
			want = append(want, ids...)
			if i < len(tc.special) {
				id, ok := tok.TokenID(tc.special[i])
				if !ok || !tok.IsControl(id) {
					t.Fatalf("%s: %q is not a control token", tc.vocab, tc.special[i])
				}
				want = append(want, id)
			}
		}
		got, err := tok.Encode(tc.text, false, true)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: Encode(%q, parseSpecial) = %v, want %v", tc.vocab, tc.text, got, want)
		}
		plain, _ := tok.Encode(tc.text, false, false)
		for _, id := range plain {
			if tok.IsControl(id) {
				t.Errorf("%s: Encode(%q) without parseSpecial has control token %d", tc.vocab, tc.text, id)
			}
		}
		if got := tok.Decode(plain); got != tc.text {
			t.Errorf("%s: Decode(Encode(%q)) = %q", tc.vocab, tc.text, got)
		}
	}
}

// TestSPMSpecialSpacePrefix checks that SPM text after a special token gets
// the space prefix again, as in llama.cpp.
func TestSPMSpecialSpacePrefix(t *testing.T) {
	tok := loadVocab(t, "ggml-vocab-llama-spm.gguf")
	hello, _ := tok.Encode("Hello", false, false)
	got, _ := tok.Encode("</s>Hello", false, true)
	want := append([]int32{tok.EOS()}, hello...)
	if !slices.Equal(got, want) {
		t.Errorf("Encode(</s>Hello) = %v, want %v", got, want)
	}
}

func TestAddSpecial(t *testing.T) {
	tests := []struct {
		vocab string
		want  []int32 // Encode("Hello world", addSpecial=true)
	}{
		{"ggml-vocab-llama-spm.gguf", []int32{1, 15043, 3186}},
		{"ggml-vocab-llama-bpe.gguf", []int32{128000, 9906, 1917}},
		{"ggml-vocab-gpt-2.gguf", []int32{15496, 995}},
	}
	for _, tc := range tests {
		tok := loadVocab(t, tc.vocab)
		got, _ := tok.Encode("Hello world", true, false)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: Encode(Hello world, addSpecial) = %v, want %v", tc.vocab, got, tc.want)
		}
	}
}

func TestEOG(t *testing.T) {
	tests := []struct {
		vocab  string
		eog    []string
		notEOG []string
	}{
		{"ggml-vocab-llama-bpe.gguf", []string{"<|end_of_text|>", "<|eot_id|>"}, []string{"<|begin_of_text|>", "Hello"}},
		{"ggml-vocab-qwen2.gguf", []string{"<|im_end|>", "<|endoftext|>"}, []string{"<|im_start|>"}},
		{"ggml-vocab-llama-spm.gguf", []string{"</s>"}, []string{"<s>"}},
	}
	for _, tc := range tests {
		tok := loadVocab(t, tc.vocab)
		for _, s := range tc.eog {
			if id, ok := tok.TokenID(s); !ok || !tok.IsEOG(id) {
				t.Errorf("%s: %q (id %d, found %v) is not end-of-generation", tc.vocab, s, id, ok)
			}
		}
		for _, s := range tc.notEOG {
			if id, ok := tok.TokenID(s); !ok || tok.IsEOG(id) {
				t.Errorf("%s: %q (id %d, found %v) should be a token that does not end generation", tc.vocab, s, id, ok)
			}
		}
	}
}

// TestLlama2TinyRandom loads the 32000-token Llama-2 vocabulary of a model
// file.
func TestLlama2TinyRandom(t *testing.T) {
	tok, err := Load(shared.Path(t, "models/llama-2-tiny-random.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if tok.VocabSize() != 32000 || tok.BOS() != 1 || tok.EOS() != 2 || !tok.AddBOS() || tok.Model() != ModelSPM {
		t.Fatalf("vocab size %d, bos %d, eos %d, add bos %v, model %s; want 32000, 1, 2, true, llama",
			tok.VocabSize(), tok.BOS(), tok.EOS(), tok.AddBOS(), tok.Model())
	}
	got, _ := tok.Encode("Hello world", true, false)
	if want := []int32{1, 15043, 3186}; !slices.Equal(got, want) {
		t.Errorf("Encode(Hello world) = %v, want %v", got, want)
	}
}
