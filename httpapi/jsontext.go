package httpapi

import "unicode/utf8"

// jsonTextValid reports whether a raw JSON value holds only valid text:
// its bytes are UTF-8 and every \u escape of a UTF-16 surrogate is part of
// a pair. encoding/json silently turns both faults into U+FFFD, so the
// check runs on the raw bytes.
func jsonTextValid(raw []byte) bool {
	if !utf8.Valid(raw) {
		return false
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' || i+1 >= len(raw) {
			continue
		}
		if raw[i+1] != 'u' {
			i++ // skip the escaped character (it may be a backslash)
			continue
		}
		u, ok := hex4(raw, i+2)
		if !ok {
			return false
		}
		switch {
		case u >= 0xdc00 && u <= 0xdfff:
			return false // a low surrogate on its own
		case u >= 0xd800 && u <= 0xdbff:
			if i+12 > len(raw) {
				return false
			}
			if raw[i+6] != '\\' || raw[i+7] != 'u' {
				return false
			}
			lo, ok := hex4(raw, i+8)
			if !ok || lo < 0xdc00 || lo > 0xdfff {
				return false
			}
			i += 11
		default:
			i += 5
		}
	}
	return true
}

// hex4 reads four hex digits at raw[at:].
func hex4(raw []byte, at int) (rune, bool) {
	if at+4 > len(raw) {
		return 0, false
	}
	var r rune
	for _, c := range raw[at : at+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}
