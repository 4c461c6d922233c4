package tokenizer

// GPT-2's byte-level BPE spells every byte as a printable code point: the
// bytes '!'..'~', '¡'..'¬' and '®'..'ÿ' stand for themselves and the other 68
// bytes are mapped, in increasing order, to U+0100, U+0101, ...

// byteRunes[b] is the code point that stands for byte b; filled once.
var byteRunes = func() (t [256]rune) {
	n := rune(0)
	for b := 0; b < 256; b++ {
		if printableByte(byte(b)) {
			t[b] = rune(b)
		} else {
			t[b] = 256 + n
			n++
		}
	}
	return t
}()

// byteStrings[b] is the UTF-8 text of byteRunes[b]; filled once.
var byteStrings = func() (t [256]string) {
	for b := range t {
		t[b] = string(byteRunes[b])
	}
	return t
}()

func printableByte(b byte) bool {
	return ('!' <= b && b <= '~') || (0xA1 <= b && b <= 0xAC) || (0xAE <= b && b <= 0xFF)
}

// mappedBytes[i] is the byte that U+0100+i stands for; filled once.
var mappedBytes = func() (t [68]byte) {
	for b := 0; b < 256; b++ {
		if r := byteRunes[b]; r >= 256 {
			t[r-256] = byte(b)
		}
	}
	return t
}()

// runeByte returns the byte that code point r stands for, and false when r
// stands for none.
func runeByte(r rune) (byte, bool) {
	switch {
	case r >= 0 && r < 256 && printableByte(byte(r)):
		return byte(r), true
	case r >= 256 && r < 256+68:
		return mappedBytes[r-256], true
	}
	return 0, false
}
