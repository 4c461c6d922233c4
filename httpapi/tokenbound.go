package httpapi

import "unicode/utf8"

// tokenByteser is a tokenizer that knows the most bytes of text one of its
// tokens can stand for.
type tokenByteser interface{ MaxTokenBytes() int }

// tokenCover is the most bytes of input text one token of tok can cover:
// the longest token, as raw bytes or as its vocabulary text (special tokens
// are matched by their text, SPM pieces spell spaces as "▁"), and never
// less than one rune (an unknown character becomes one token).
func tokenCover(tok Tokenizer) int {
	if t, ok := tok.(tokenByteser); ok {
		return max(t.MaxTokenBytes(), utf8.UTFMax)
	}
	n := utf8.UTFMax
	for id := range int32(tok.VocabSize()) {
		n = max(n, len(tok.TokenBytes(id)), len(tok.TokenText(id)))
	}
	return n
}

// fitsByLength refuses a text of n bytes whose length alone proves that
// its tokens cannot fit the context: even if every token covered as many
// bytes as the longest can, there would be too many. It costs nothing for
// texts shorter than the context in bytes, which always pass.
func fitsByLength(param string, n int, tok Tokenizer, lim limits) error {
	if n < lim.ctx {
		return nil
	}
	cover := tokenCover(tok)
	least := (n + cover - 1) / cover
	if least >= lim.ctx {
		return tooLong(param, "%s is %d bytes, at least %d tokens, but the context holds %d, including at least one generated token",
			param, n, least, lim.ctx)
	}
	return nil
}
