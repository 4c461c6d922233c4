package tokenizer

// MaxTokenBytes returns the most bytes of input text one token can stand
// for: the longest token, counted both as the bytes it decodes to and as
// its vocabulary text (control and user-defined tokens are matched by
// their text, SPM pieces spell a space as the three bytes of "▁"). A text
// of n bytes therefore encodes to at least n / MaxTokenBytes tokens, which
// lets a server refuse an over-long prompt before encoding it.
func (t *Tokenizer) MaxTokenBytes() int {
	n := 0
	for id, p := range t.pieces {
		n = max(n, len(p), len(t.vocab.Tokens[id]))
	}
	return n
}
