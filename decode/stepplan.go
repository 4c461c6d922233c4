package decode

// stepEnd is the end of the step that starts at token lo of b when a step
// holds at most rows tokens, at most wanted of which want logits: the GPU
// engine computes the logits of a step's wanted rows in one buffer of
// that many rows. A step always takes at least one token.
func stepEnd(b *Batch, lo, rows, wanted int) int {
	hi, n := lo, 0
	for hi < b.Len() && hi-lo < rows {
		if b.Logits[hi] {
			if n == wanted && hi > lo {
				break
			}
			n++
		}
		hi++
	}
	return hi
}
