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

// atMostEncoder is a tokenizer that can give up once a text passes a
// number of tokens (model/tokenizer's EncodeAtMost).
type atMostEncoder interface {
	EncodeAtMost(text string, addSpecial, parseSpecial bool, limit int) ([]int32, bool, error)
}

// encodeFitting tokenizes a prompt text (control tokens parsed) that must
// fit the context: with a tokenizer that can, it stops as soon as the
// tokens are too many, so the work is bounded by the context, not the text.
func encodeFitting(param, text string, addSpecial bool, tok Tokenizer, lim limits) ([]int32, error) {
	if e, ok := tok.(atMostEncoder); ok {
		ids, over, err := e.EncodeAtMost(text, addSpecial, true, lim.ctx-1)
		if err != nil {
			return nil, invalid(param, "cannot tokenize %s: %v", param, err)
		}
		if over {
			return nil, tooLong(param, "%s has more than %d tokens but the context holds %d, including at least one generated token", param, lim.ctx-1, lim.ctx)
		}
		return ids, promptFits(param, ids, lim)
	}
	ids, err := tok.Encode(text, addSpecial, true)
	if err != nil {
		return nil, invalid(param, "cannot tokenize %s: %v", param, err)
	}
	return ids, promptFits(param, ids, lim)
}
