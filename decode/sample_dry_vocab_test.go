package decode

import (
	"testing"

	"llmserve/internal/shared"
	"llmserve/model/tokenizer"
)

var _ TokenText = (*tokenizer.Tokenizer)(nil)

// TestDRYBreakersFromVocabulary finds llama.cpp's default breakers in a
// real vocabulary: the byte token of "\n" and every token containing ":"
// are breakers of one token.
func TestDRYBreakersFromVocabulary(t *testing.T) {
	tok, err := tokenizer.Load(shared.Path(t, "vocab/ggml-vocab-llama-bpe.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSamplerText(SamplerParams{Temperature: 1, DRYMultiplier: 0.8, DRYBase: 1.75, DRYAllowedLength: 2}, tok.VocabSize(), tok)
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"\n", ":", "\"", "*", "://", ":\n"} {
		id, ok := tok.TokenID(tokenizerText(tok, text))
		if !ok {
			t.Fatalf("no token %q", text)
		}
		if !s.dry.singleBreaker(id) {
			t.Errorf("token %d (%q) is not a breaker", id, text)
		}
	}
	if id, _ := tok.TokenID("Hello"); s.dry.singleBreaker(id) {
		t.Errorf("Hello is a breaker")
	}
}

// tokenizerText is the vocabulary text of a one-token string.
func tokenizerText(tok *tokenizer.Tokenizer, s string) string {
	ids, err := tok.Encode(s, false, false)
	if err != nil || len(ids) != 1 {
		return ""
	}
	return tok.TokenText(ids[0])
}
