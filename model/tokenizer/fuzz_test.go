package tokenizer

import (
	"path/filepath"
	"testing"
	"unicode/utf8"

	"llmserve/internal/shared"
)

// sharedVocabs loads the tokenizer of every vocabulary file in the shared
// data, skipping the fuzz target when there is none.
func sharedVocabs(f *testing.F) []*Tokenizer {
	files, _ := filepath.Glob(filepath.Join(shared.Path(f, "vocab"), "*.gguf"))
	if len(files) == 0 {
		f.Skip("no vocabulary files in the shared data: skipping")
	}
	var toks []*Tokenizer
	for _, p := range files {
		toks = append(toks, loadVocab(f, filepath.Base(p)))
	}
	return toks
}

// FuzzEncode checks on arbitrary input that encoding never fails or panics,
// that every id is inside the vocabulary, and that valid UTF-8 comes back
// from Decode unchanged (with the SPM space prefix) where the vocabulary can
// spell every byte (Falcon's cannot: llama.cpp drops the bytes it lacks).
func FuzzEncode(f *testing.F) {
	for _, s := range []string{"", " ", "Hello world", "\xff\xfe", "é\u0301 中文 🦙", "<|eot_id|>x", "  \n\n\t 12345'S"} {
		f.Add(s)
	}
	toks := sharedVocabs(f)
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

// FuzzDecode decodes arbitrary ids, in and out of the vocabulary, with
// Decode and a StreamDecoder, which must agree, then encodes the text
// again: every id that comes back must be inside the vocabulary.
func FuzzDecode(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 2})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x00, 0x01, 0xf4, 0x00})
	f.Add([]byte{0x41, 0, 0, 0, 0xc3, 0, 0, 0, 0x80, 0, 0, 0})
	toks := sharedVocabs(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		ids := make([]int32, len(raw)/4)
		for i := range ids {
			ids[i] = int32(uint32(raw[4*i]) | uint32(raw[4*i+1])<<8 | uint32(raw[4*i+2])<<16 | uint32(raw[4*i+3])<<24)
		}
		for _, tok := range toks {
			// Most ids are in range: fold the fuzzer's words into the vocabulary
			// except for the ones whose top bit is set.
			in := make([]int32, len(ids))
			for i, id := range ids {
				in[i] = id
				if id >= 0 {
					in[i] = id % int32(tok.VocabSize())
				}
			}
			text := tok.Decode(in)
			sd := tok.NewStreamDecoder()
			var streamed []byte
			for _, id := range in {
				streamed = append(streamed, sd.Add(id)...)
			}
			if streamed = append(streamed, sd.Flush()...); string(streamed) != text {
				t.Fatalf("%s: streaming %v gave %q, Decode %q", tok.Model(), in, streamed, text)
			}
			back, err := tok.Encode(text, false, false)
			if err != nil {
				t.Fatalf("Encode(Decode(%v)): %v", in, err)
			}
			for _, id := range back {
				if id < 0 || int(id) >= tok.VocabSize() {
					t.Fatalf("Encode(%q) gave id %d outside the vocabulary", text, id)
				}
			}
		}
	})
}
