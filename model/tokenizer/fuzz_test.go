package tokenizer

import (
	"testing"
	"unicode/utf8"
)

// FuzzEncode checks on arbitrary input that encoding never fails or panics,
// that every id is inside the vocabulary, and that valid UTF-8 comes back
// from Decode unchanged (with the SPM space prefix) where the vocabulary can
// spell every byte (Falcon's cannot: llama.cpp drops the bytes it lacks).
func FuzzEncode(f *testing.F) {
	for _, s := range []string{"", " ", "Hello world", "\xff\xfe", "é\u0301 中文 🦙", "<|eot_id|>x", "  \n\n\t 12345'S"} {
		f.Add(s)
	}
	toks := []*Tokenizer{loadVocab(f, "ggml-vocab-llama-bpe.gguf"), loadVocab(f, "ggml-vocab-llama-spm.gguf"),
		loadVocab(f, "ggml-vocab-qwen2.gguf"), loadVocab(f, "ggml-vocab-falcon.gguf")}
	f.Fuzz(func(t *testing.T, s string) {
		for _, tok := range toks {
			for _, parse := range []bool{false, true} {
				ids, err := tok.Encode(s, true, parse)
				if err != nil {
					t.Fatalf("Encode(%q): %v", s, err)
				}
				for _, id := range ids {
					if id < 0 || int(id) >= tok.VocabSize() {
						t.Fatalf("Encode(%q) gave id %d outside the vocabulary", s, id)
					}
				}
				if parse || !utf8.ValidString(s) || containsRune(s, '\u2581') || !spellsAllBytes(tok) {
					continue
				}
				want := s
				if tok.vocab.AddSpacePrefix && s != "" {
					want = " " + s
				}
				if got := tok.Decode(ids); got != want {
					t.Fatalf("%s: Decode(Encode(%q)) = %q", tok.vocab.Pre, s, got)
				}
			}
		}
	})
}

func containsRune(s string, r rune) bool {
	for _, c := range s {
		if c == r {
			return true
		}
	}
	return false
}

// spellsAllBytes reports whether tok has a token for every single byte.
func spellsAllBytes(tok *Tokenizer) bool {
	for b := 0; b < 256; b++ {
		if tok.vocab.Model == ModelSPM {
			if tok.byteTok[b] == tok.vocab.UNK {
				return false
			}
		} else if _, ok := tok.ids[byteStrings[b]]; !ok {
			return false
		}
	}
	return true
}
