package tokenizer

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// piece computes the bytes token id stands for, like llama.cpp's
// token_to_piece with special=true: control, unknown and user-defined tokens
// are their text; SPM tokens have ▁ turned back into spaces and <0xXX> byte
// tokens are the byte; BPE tokens are mapped back through GPT-2's byte code.
// Tokens of undefined or unused type stand for nothing.
func (t *Tokenizer) piece(id int32) []byte {
	text := t.vocab.Tokens[id]
	switch t.types[id] {
	case TypeControl, TypeUnknown, TypeUserDefined:
		return []byte(text)
	case TypeNormal:
		if t.vocab.Model == ModelSPM {
			return []byte(strings.ReplaceAll(text, "\u2581", " "))
		}
		return decodeByteLevel(text)
	case TypeByte:
		if len(text) == 6 && strings.HasPrefix(text, "<0x") && text[5] == '>' {
			if b, err := strconv.ParseUint(text[3:5], 16, 8); err == nil {
				return []byte{byte(b)}
			}
		}
		return []byte(text)
	}
	return nil
}

// decodeByteLevel maps GPT-2 byte-encoded text back to the bytes. A code
// point that stands for no byte is kept as [UNK_BYTE_0x..] like llama.cpp.
func decodeByteLevel(text string) []byte {
	out := make([]byte, 0, len(text))
	for _, r := range decodeCpts(text) {
		if b, ok := runeByte(r); ok {
			out = append(out, b)
			continue
		}
		out = append(out, "[UNK_BYTE_0x"...)
		for _, c := range appendCpt(nil, r) {
			out = append(out, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
		}
		out = append(out, text...)
		out = append(out, ']')
	}
	return out
}

// TokenBytes returns the raw bytes id stands for; control tokens give their
// text. It returns nil for an id outside the vocabulary.
func (t *Tokenizer) TokenBytes(id int32) []byte {
	if !t.valid(id) {
		return nil
	}
	return append([]byte(nil), t.pieces[id]...)
}

// IsControl reports whether id is a control or unknown token: such tokens
// render as nothing in Decode and StreamDecoder output.
func (t *Tokenizer) IsControl(id int32) bool {
	if !t.valid(id) {
		return false
	}
	ty := t.types[id]
	return ty == TypeControl || ty == TypeUnknown
}

// textBytes returns what id adds to decoded text: nothing for ids outside
// the vocabulary and for control and unknown tokens (llama.cpp's
// token_to_piece with special=false), its bytes otherwise.
func (t *Tokenizer) textBytes(id int32) []byte {
	if !t.valid(id) || t.IsControl(id) {
		return nil
	}
	return t.pieces[id]
}

// Decode returns the text of ids: the bytes of each token concatenated,
// control tokens (BOS, EOS, <|eot_id|>, ...) left out, exactly what a
// StreamDecoder emits for the same ids. No space is stripped: text encoded
// by an SPM vocabulary with a space prefix decodes with a leading space.
// Invalid UTF-8 is passed through as is.
func (t *Tokenizer) Decode(ids []int32) string {
	var b []byte
	for _, id := range ids {
		b = append(b, t.textBytes(id)...)
	}
	return string(b)
}

// StreamDecoder turns ids into text one at a time without ever splitting a
// UTF-8 character: bytes of a character that is not complete yet are held
// back until the tokens that complete it arrive. Control tokens add nothing.
type StreamDecoder struct {
	t       *Tokenizer
	pending []byte // bytes held back: an incomplete UTF-8 sequence at most 3 long
}

// NewStreamDecoder returns a StreamDecoder for t.
func (t *Tokenizer) NewStreamDecoder() *StreamDecoder { return &StreamDecoder{t: t} }

// Add decodes id and returns the text that is complete so far.
func (d *StreamDecoder) Add(id int32) string {
	d.pending = append(d.pending, d.t.textBytes(id)...)
	keep := incompleteTail(d.pending)
	out := string(d.pending[:len(d.pending)-keep])
	d.pending = append(d.pending[:0], d.pending[len(d.pending)-keep:]...)
	return out
}

// Flush returns whatever is held back (an incomplete character, as is) and
// resets the decoder.
func (d *StreamDecoder) Flush() string {
	out := string(d.pending)
	d.pending = d.pending[:0]
	return out
}

// incompleteTail returns how many bytes at the end of b form the start of a
// UTF-8 character that more bytes could still complete.
func incompleteTail(b []byte) int {
	for k := 1; k <= 3 && k <= len(b); k++ {
		c := b[len(b)-k]
		if c&0xC0 == 0x80 {
			continue // continuation byte: look further back for the lead
		}
		if c < 0xC0 {
			return 0 // ASCII: nothing pending
		}
		need := utf8Len(c)
		if need > k && c < 0xF5 && !utf8.FullRune(b[len(b)-k:]) {
			return k
		}
		return 0
	}
	return 0
}
