package tokenizer

import (
	"testing"

	"llmserve/gguf"
	"llmserve/internal/shared"
)

// vocabOf reads the vocabulary of a shared vocabulary file, before New.
func vocabOf(t *testing.T, name string) *Vocab {
	t.Helper()
	f, err := gguf.Open(shared.Path(t, "vocab/"+name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, err := VocabFromMetadata(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

// TestEOGMarkerTexts renames reserved tokens of the Llama 3 vocabulary to
// each known end-of-generation marker (as Llama 3.1 renamed
// <|reserved_special_token_4|> to <|eom_id|>): each must end generation.
func TestEOGMarkerTexts(t *testing.T) {
	v := vocabOf(t, "ggml-vocab-llama-bpe.gguf")
	markers := []string{"<|eom_id|>", "<|im_end|>", "<|endoftext|>", "<end_of_turn>", "<|end|>", "</s>",
		"<|return|>", "<|call|>", "<EOT>", "<|flush|>", "<end_of_utterance>", "<｜end▁of▁sentence｜>"}
	tokens := append([]string(nil), v.Tokens...)
	const first = 128011 // <|reserved_special_token_3|> onwards: unused in Llama 3
	for i, m := range markers {
		tokens[first+i] = m
	}
	v.Tokens = tokens
	tok, err := New(v)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range markers {
		id := int32(first + i)
		if !tok.IsEOG(id) {
			t.Errorf("%q (id %d) does not end generation", m, id)
		}
	}
	for _, id := range []int32{128000, 128006, 128010, 9906} { // <|begin_of_text|>, <|start_header_id|>, a reserved token, "Hello"
		if tok.IsEOG(id) {
			t.Errorf("token %d %q ends generation", id, v.Tokens[id])
		}
	}
}

// TestEOGMetadataIDs checks that the eos, eot and eom ids of the metadata
// end generation whatever their text.
func TestEOGMetadataIDs(t *testing.T) {
	tests := []struct {
		name string
		set  func(v *Vocab)
		id   int32
	}{
		{"eos", func(v *Vocab) { v.EOS = 128002 }, 128002},
		{"eot", func(v *Vocab) { v.EOT = 128003 }, 128003},
		{"eom", func(v *Vocab) { v.EOM = 128004 }, 128004},
	}
	base := vocabOf(t, "ggml-vocab-llama-bpe.gguf")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := *base
			tc.set(&v)
			tok, err := New(&v)
			if err != nil {
				t.Fatal(err)
			}
			if !tok.IsEOG(tc.id) {
				t.Errorf("%s id %d (%q) does not end generation", tc.name, tc.id, v.Tokens[tc.id])
			}
		})
	}
}

// TestEOGSets checks the whole end-of-generation set of shared
// vocabularies.
func TestEOGSets(t *testing.T) {
	tests := []struct {
		vocab string
		want  []string
	}{
		{"ggml-vocab-llama-bpe.gguf", []string{"<|end_of_text|>", "<|eot_id|>"}},
		{"ggml-vocab-qwen2.gguf", []string{"</s>", "<|endoftext|>", "<|im_end|>"}},
	}
	for _, tc := range tests {
		tok := loadVocab(t, tc.vocab)
		var got []string
		for id := int32(0); id < int32(tok.VocabSize()); id++ {
			if tok.IsEOG(id) {
				got = append(got, tok.vocab.Tokens[id])
			}
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: end-of-generation tokens %q, want %q", tc.vocab, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: end-of-generation tokens %q, want %q", tc.vocab, got, tc.want)
				break
			}
		}
	}
}
