package tokenizer

import (
	"strings"
	"testing"

	"llmserve/internal/shared"
)

// TestMaxTokenBytesBound checks the property MaxTokenBytes promises: no
// text encodes to fewer than len(text) / MaxTokenBytes tokens, on
// llama.cpp's test strings and on runs of the characters that long tokens
// are made of.
func TestMaxTokenBytesBound(t *testing.T) {
	for _, name := range vocabFiles {
		t.Run(name, func(t *testing.T) {
			tok := loadVocab(t, name)
			most := tok.MaxTokenBytes()
			if most < 1 {
				t.Fatalf("MaxTokenBytes %d", most)
			}
			texts := []string{strings.Repeat(" ", 4000), strings.Repeat("=", 3000), strings.Repeat("\n", 500),
				strings.Repeat("-", 2000), strings.Repeat("ab", 1000), strings.Repeat("日本", 300)}
			for _, v := range readVectors(t, shared.Path(t, "vocab/"+name)) {
				texts = append(texts, v.text)
			}
			for _, text := range texts {
				for _, special := range []bool{false, true} {
					ids, err := tok.Encode(text, false, special)
					if err != nil {
						t.Fatal(err)
					}
					if len(ids)*most < len(text) {
						t.Errorf("%q (%d bytes) encodes to %d tokens, fewer than the bound with %d bytes a token", cut(text), len(text), len(ids), most)
					}
				}
			}
		})
	}
}

func cut(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
