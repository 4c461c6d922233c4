package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// spmSegment is the least length of the pieces EncodeAtMost hands to the
// SPM merger when it may cut a fragment: long enough that cuts are rare,
// short enough that the merger's cost (worse than linear in the length of
// what it merges) stays small.
const spmSegment = 4096

// EncodeAtMost is Encode that gives up once the text has more than limit
// tokens: it returns the tokens found so far (more than limit of them) and
// true. When the text has at most limit tokens it returns exactly what
// Encode returns, and false. A server refuses an over-long prompt with it
// after work in proportion to limit rather than to the text.
//
// Byte-level BPE stops between pre-tokenized words. SPM stops between
// segments of a fragment, cut before a space (▁) that follows another
// character, which no merge can cross when no token of the vocabulary
// holds a ▁ after another character (as in SentencePiece vocabularies
// trained with whitespace splitting); with any other vocabulary SPM
// fragments are merged whole, and it stops between fragments only.
func (t *Tokenizer) EncodeAtMost(text string, addSpecial, parseSpecial bool, limit int) ([]int32, bool, error) {
	out := make([]int32, 0, min(len(text)/3, limit)+2)
	if addSpecial && t.vocab.AddBOS {
		out = append(out, t.vocab.BOS)
	}
	frags := t.partition(text, parseSpecial)
	cuttable := t.vocab.Model == ModelSPM && len(text) > spmSegment && t.spmCuttable()
	prevSpecial := true // the text's start counts as following a special token
	for _, f := range frags {
		switch {
		case f.special:
			out = append(out, f.id)
			prevSpecial = true
		case t.vocab.Model == ModelSPM:
			s := f.text
			if t.vocab.AddSpacePrefix && prevSpecial {
				s = " " + s
			}
			s = escapeSpaces(s)
			for len(s) > 0 && len(out) <= limit {
				n := len(s)
				if cuttable {
					n = spmCut(s, spmSegment)
				}
				out = t.encodeSPM(s[:n], out)
				s = s[n:]
			}
			prevSpecial = false
		case t.vocab.Model == ModelBPE:
			out = t.encodeBPEAtMost(f.text, out, limit)
		}
		if len(out) > limit {
			return out, true, nil
		}
	}
	if addSpecial && t.vocab.AddEOS {
		out = append(out, t.vocab.EOS)
	}
	return out, len(out) > limit, nil
}

// encodeBPEAtMost is encodeBPE that stops after the word that takes out
// past limit tokens.
func (t *Tokenizer) encodeBPEAtMost(text string, out []int32, limit int) []int32 {
	s := bpeSession{t: t}
	for _, w := range t.pre.split(decodeCpts(text)) {
		if len(out) > limit {
			break
		}
		s.buf = s.buf[:0]
		for _, r := range w {
			var enc [4]byte
			for _, b := range appendCpt(enc[:0], r) {
				s.buf = append(s.buf, byteStrings[b]...)
			}
		}
		out = s.encodeWord(string(s.buf), out)
	}
	return out
}

// spmCuttable reports whether no token holds a ▁ right after a character
// other than ▁: then no SPM merge crosses the start of a run of ▁ that
// follows other text, and the pieces between such points merge alone.
func (t *Tokenizer) spmCuttable() bool {
	const sp = "\u2581"
	for _, tok := range t.vocab.Tokens {
		for i := strings.Index(tok, sp); i >= 0; {
			if i > 0 && !strings.HasSuffix(tok[:i], sp) {
				return false
			}
			j := strings.Index(tok[i+len(sp):], sp)
			if j < 0 {
				break
			}
			i += len(sp) + j
		}
	}
	return true
}

// spmCut returns where to end the first segment of s (spaces escaped): at
// the first ▁ at or after least bytes that follows a character other than
// ▁, or at the end of s.
func spmCut(s string, least int) int {
	const sp = "\u2581"
	for i := least; i < len(s); {
		j := strings.Index(s[i:], sp)
		if j < 0 {
			return len(s)
		}
		at := i + j
		if at > 0 && !strings.HasSuffix(s[:at], sp) {
			return at
		}
		i = at + len(sp)
		for i < len(s) && !utf8.RuneStart(s[i]) {
			i++
		}
	}
	return len(s)
}
