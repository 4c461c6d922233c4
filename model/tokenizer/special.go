package tokenizer

import "strings"

// fragment is a piece of the text to encode: either a special token found
// in it or raw text between such tokens.
type fragment struct {
	special bool
	id      int32  // the token, when special
	text    string // the raw text, otherwise (never empty)
}

// partition splits text at occurrences of special tokens, longest tokens
// first, like llama.cpp's tokenizer_st_partition. User-defined tokens are
// always split out; control and unknown tokens only with parseSpecial.
func (t *Tokenizer) partition(text string, parseSpecial bool) []fragment {
	if text == "" {
		return nil
	}
	frags := []fragment{{text: text}}
	for _, id := range t.special {
		ty := t.types[id]
		if !parseSpecial && (ty == TypeControl || ty == TypeUnknown) {
			continue
		}
		tok := t.vocab.Tokens[id]
		var next []fragment
		changed := false
		for _, f := range frags {
			if f.special || !strings.Contains(f.text, tok) {
				next = append(next, f)
				continue
			}
			changed = true
			rest := f.text
			for {
				i := strings.Index(rest, tok)
				if i < 0 {
					if rest != "" {
						next = append(next, fragment{text: rest})
					}
					break
				}
				if i > 0 {
					next = append(next, fragment{text: rest[:i]})
				}
				next = append(next, fragment{special: true, id: id})
				rest = rest[i+len(tok):]
			}
		}
		if changed {
			frags = next
		}
	}
	return frags
}
