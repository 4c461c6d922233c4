package tokenizer

import "unicode"

// cptFlags classifies a code point the way llama.cpp's unicode tables do:
// one general category (\p{N}, \p{L}, \p{Z}, \p{M}, \p{P}, \p{S} or \p{C},
// where C also covers unassigned code points) plus the White_Space property.
// The zero value stands for "no code point" (outside the text).
type cptFlags uint16

const (
	flagNumber cptFlags = 1 << iota
	flagLetter
	flagSeparator
	flagMark
	flagPunct
	flagSymbol
	flagControl
	flagWhitespace

	flagCategories = flagNumber | flagLetter | flagSeparator | flagMark | flagPunct | flagSymbol | flagControl
)

func (f cptFlags) isNumber() bool     { return f&flagNumber != 0 }
func (f cptFlags) isLetter() bool     { return f&flagLetter != 0 }
func (f cptFlags) isWhitespace() bool { return f&flagWhitespace != 0 }
func (f cptFlags) defined() bool      { return f != 0 }

// asciiFlags holds the flags of the code points below 128; it is filled once
// and only read afterwards.
var asciiFlags = func() (t [128]cptFlags) {
	for r := range t {
		t[r] = computeFlags(rune(r))
	}
	return t
}()

func computeFlags(r rune) cptFlags {
	if r < 0 || r > unicode.MaxRune {
		return 0
	}
	var f cptFlags
	switch {
	case unicode.IsNumber(r):
		f = flagNumber
	case unicode.IsLetter(r):
		f = flagLetter
	case unicode.In(r, unicode.Zs, unicode.Zl, unicode.Zp):
		f = flagSeparator
	case unicode.IsMark(r):
		f = flagMark
	case unicode.IsPunct(r):
		f = flagPunct
	case unicode.IsSymbol(r):
		f = flagSymbol
	default:
		f = flagControl
	}
	if unicode.Is(unicode.White_Space, r) {
		f |= flagWhitespace
	}
	return f
}

// flagsOf returns the flags of code point r.
func flagsOf(r rune) cptFlags {
	if r >= 0 && r < 128 {
		return asciiFlags[r]
	}
	return computeFlags(r)
}

// utf8Len is the length of the UTF-8 sequence that lead byte b announces,
// counting any byte that is not a valid lead as a sequence of one (like
// llama.cpp's unicode_len_utf8).
func utf8Len(b byte) int {
	switch {
	case b < 0xC0:
		return 1
	case b < 0xE0:
		return 2
	case b < 0xF0:
		return 3
	default:
		return 4
	}
}

// decodeCpts splits s into code points with llama.cpp's lenient decoder:
// sequences are accepted by their bit patterns alone (no overlong or
// surrogate checks), and each byte that does not start a well-formed
// sequence becomes U+FFFD.
func decodeCpts(s string) []rune {
	out := make([]rune, 0, len(s))
	for i := 0; i < len(s); {
		r, n := decodeCpt(s, i)
		out = append(out, r)
		i += n
	}
	return out
}

func decodeCpt(s string, i int) (rune, int) {
	const bad = 0xFFFD
	b := s[i]
	cont := func(k int) bool { return i+k < len(s) && s[i+k]&0xC0 == 0x80 }
	switch {
	case b&0x80 == 0:
		return rune(b), 1
	case b&0x40 == 0:
		return bad, 1
	case b&0x20 == 0:
		if !cont(1) {
			return bad, 1
		}
		return rune(b&0x1F)<<6 | rune(s[i+1]&0x3F), 2
	case b&0x10 == 0:
		if !cont(1) || !cont(2) {
			return bad, 1
		}
		return rune(b&0x0F)<<12 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F), 3
	case b&0x08 == 0:
		if !cont(1) || !cont(2) || !cont(3) {
			return bad, 1
		}
		r := rune(b&0x07)<<18 | rune(s[i+1]&0x3F)<<12 | rune(s[i+2]&0x3F)<<6 | rune(s[i+3]&0x3F)
		if r > unicode.MaxRune {
			return bad, 4
		}
		return r, 4
	}
	return bad, 1
}

// appendCpt appends the UTF-8 encoding of r without validity checks beyond
// the range (surrogates are encoded as three bytes, as llama.cpp does).
func appendCpt(dst []byte, r rune) []byte {
	switch {
	case r < 0x80:
		return append(dst, byte(r))
	case r < 0x800:
		return append(dst, 0xC0|byte(r>>6), 0x80|byte(r&0x3F))
	case r < 0x10000:
		return append(dst, 0xE0|byte(r>>12), 0x80|byte(r>>6&0x3F), 0x80|byte(r&0x3F))
	default:
		return append(dst, 0xF0|byte(r>>18), 0x80|byte(r>>12&0x3F), 0x80|byte(r>>6&0x3F), 0x80|byte(r&0x3F))
	}
}
