package httpapi

import "unicode/utf8"

// appendJSONString appends s as a JSON string, escaped exactly as
// encoding/json's Marshal escapes it: quotes and backslashes, control
// characters (\b \f \n \r \t short, the others as \u00XX), the HTML
// characters <, > and & as \u003c \u003e \u0026, U+2028 and U+2029, and
// every byte of invalid UTF-8 as \ufffd. Streamed chunks are written with it
// so that they need no reflection, yet read the same as the rest of the API.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	plain := 0 // start of the bytes not yet copied
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonPlain(c) {
				i++
				continue
			}
			dst = append(dst, s[plain:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			plain = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[plain:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[plain:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		plain = i
	}
	dst = append(dst, s[plain:]...)
	return append(dst, '"')
}

// jsonPlain says whether an ASCII byte stands for itself in a JSON string.
func jsonPlain(c byte) bool {
	return c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
}
