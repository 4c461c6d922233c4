package tokenizer

import (
	"slices"
	"strings"
	"testing"

	"llmserve/internal/shared"
)

// TestEncodeAtMost checks that EncodeAtMost agrees with Encode: the same
// tokens when the text has at most limit of them, and more than limit
// tokens, a prefix of Encode's, flagged, when it has more. Texts longer
// than an SPM segment are made of llama.cpp's test strings, so that cuts
// fall among spaces of every kind.
func TestEncodeAtMost(t *testing.T) {
	for _, name := range vocabFiles {
		t.Run(name, func(t *testing.T) {
			tok := loadVocab(t, name)
			var texts []string
			var all strings.Builder
			for _, v := range readVectors(t, shared.Path(t, "vocab/"+name)) {
				texts = append(texts, v.text)
				all.WriteString(v.text)
			}
			joined := all.String()
			texts = append(texts, strings.Repeat(joined, 3), strings.Repeat("a  b   c\t\n ", 1500),
				strings.Repeat(" ", 9000), strings.Repeat("word ", 2000)+"<s></s>"+strings.Repeat(" x", 3000))
			for _, text := range texts {
				for _, special := range []bool{false, true} {
					want, _ := tok.Encode(text, true, special)
					for _, limit := range []int{len(want) + 10, len(want), len(want) - 1, len(want) / 2, 1} {
						got, over, err := tok.EncodeAtMost(text, true, special, limit)
						if err != nil {
							t.Fatal(err)
						}
						switch {
						case len(want) <= limit && (over || !slices.Equal(got, want)):
							t.Errorf("%q limit %d: %d tokens (over %v), want Encode's %d", cut(text), limit, len(got), over, len(want))
						case len(want) > limit && (!over || len(got) <= limit || !slices.Equal(got, want[:len(got)])):
							t.Errorf("%q limit %d of %d: %d tokens, over %v, prefix of Encode's %v", cut(text), limit, len(want), len(got), over,
								len(got) <= len(want) && slices.Equal(got, want[:len(got)]))
						}
					}
				}
			}
		})
	}
}
