package tokenizer

// The two splitters below follow the hand-written matchers llama.cpp uses in
// place of a regex engine for the GPT-2 and Llama-3 pre-tokenizer patterns.
// Their classes come from the full Unicode tables (cptFlags), and every code
// point that no alternative matches becomes a word of its own.

// customScan holds one chunk being split by a custom matcher.
type customScan struct {
	cpts    []rune // the whole text
	lo, hi  int    // the chunk, cpts[lo:hi]
	prevEnd int    // end of the last word emitted
	out     []int  // word lengths emitted so far
}

// cpt returns the code point at pos, or -1 outside the chunk.
func (s *customScan) cpt(pos int) rune {
	if pos >= s.lo && pos < s.hi {
		return s.cpts[pos]
	}
	return -1
}

// flags returns the flags at pos, or zero outside the chunk.
func (s *customScan) flags(pos int) cptFlags {
	if pos >= s.lo && pos < s.hi {
		return flagsOf(s.cpts[pos])
	}
	return 0
}

// emit ends a word at end and returns its length (zero-length words are not
// recorded).
func (s *customScan) emit(end int) int {
	n := end - s.prevEnd
	if n > 0 {
		s.out = append(s.out, n)
	}
	s.prevEnd = end
	return n
}

// customSplitter turns a per-chunk scan function into a splitter.
func customSplitter(scan func(s *customScan)) splitter {
	return func(cpts []rune, offsets []int) []int {
		s := customScan{cpts: cpts, out: make([]int, 0, len(offsets))}
		start := 0
		for _, n := range offsets {
			s.lo, s.hi, s.prevEnd = start, start+n, start
			scan(&s)
			start += n
		}
		return s.out
	}
}

func lowerASCII(r rune) rune {
	if 'A' <= r && r <= 'Z' {
		return r + 'a' - 'A'
	}
	return r
}

// contraction returns the end of 's|'t|'re|'ve|'m|'ll|'d at pos, or -1. With
// fold the letters match in either case.
func (s *customScan) contraction(pos int, fold bool) int {
	if s.cpt(pos) != '\'' || pos+1 >= s.hi {
		return -1
	}
	low := func(r rune) rune {
		if fold {
			return lowerASCII(r)
		}
		return r
	}
	c1 := low(s.cpt(pos + 1))
	if c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd' {
		return pos + 2
	}
	if pos+2 < s.hi {
		c2 := low(s.cpt(pos + 2))
		if (c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l') {
			return pos + 3
		}
	}
	return -1
}

// scanGPT2 splits by 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
func scanGPT2(s *customScan) {
	for pos := s.lo; pos < s.hi; {
		c := s.cpt(pos)
		f := s.flags(pos)
		if end := s.contraction(pos, false); end >= 0 {
			pos += s.emit(end)
			continue
		}
		f2 := f
		skip := 0
		if c == ' ' {
			f2 = s.flags(pos + 1)
			skip = 1
		}
		switch {
		case f2.isLetter():
			pos += skip
			for s.flags(pos).isLetter() {
				pos++
			}
			s.emit(pos)
			continue
		case f2.isNumber():
			pos += skip
			for s.flags(pos).isNumber() {
				pos++
			}
			s.emit(pos)
			continue
		case isOther(f2):
			pos += skip
			for isOther(s.flags(pos)) {
				pos++
			}
			s.emit(pos)
			continue
		}
		nws := 0
		for s.flags(pos + nws).isWhitespace() {
			nws++
		}
		switch {
		case nws > 1 && s.cpt(pos+nws) != -1: // \s+(?!\S)
			pos += nws - 1
			s.emit(pos)
		case nws > 0: // \s+
			pos += nws
			s.emit(pos)
		default:
			pos++
			s.emit(pos)
		}
	}
}

// isOther reports [^\s\p{L}\p{N}] for a code point inside the chunk.
func isOther(f cptFlags) bool {
	return f.defined() && f&(flagWhitespace|flagLetter|flagNumber) == 0
}

// scanLlama3 splits by
// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func scanLlama3(s *customScan) {
	for pos := s.lo; pos < s.hi; {
		c := s.cpt(pos)
		f := s.flags(pos)
		if end := s.contraction(pos, true); end >= 0 {
			pos += s.emit(end)
			continue
		}
		// [^\r\n\p{L}\p{N}]?\p{L}+
		if !(c == '\r' || c == '\n' || f.isNumber()) && (f.isLetter() || s.flags(pos+1).isLetter()) {
			pos++
			for s.flags(pos).isLetter() {
				pos++
			}
			s.emit(pos)
			continue
		}
		// \p{N}{1,3}
		if f.isNumber() {
			ini := pos
			for s.flags(pos).isNumber() {
				pos++
				if pos-ini >= 3 {
					s.emit(pos)
					ini = pos
				}
			}
			s.emit(pos)
			continue
		}
		// ' ?[^\s\p{L}\p{N}]+[\r\n]*' (the first test looks at f, as llama.cpp does)
		f2 := f
		if c == ' ' {
			f2 = s.flags(pos + 1)
		}
		if f2&(flagWhitespace|flagLetter|flagNumber) == 0 && f.defined() {
			if c == ' ' {
				pos++
			}
			for isOther(f2) {
				pos++
				f2 = s.flags(pos)
			}
			for c2 := s.cpt(pos); c2 == '\r' || c2 == '\n'; c2 = s.cpt(pos) {
				pos++
			}
			s.emit(pos)
			continue
		}
		nws, lastNL := 0, 0
		for s.flags(pos + nws).isWhitespace() {
			if c2 := s.cpt(pos + nws); c2 == '\r' || c2 == '\n' {
				lastNL = pos + nws + 1
			}
			nws++
		}
		switch {
		case lastNL > 0: // \s*[\r\n]+
			pos = lastNL
			s.emit(pos)
		case nws > 1 && s.cpt(pos+nws) != -1: // \s+(?!\S)
			pos += nws - 1
			s.emit(pos)
		case nws > 0: // \s+
			pos += nws
			s.emit(pos)
		default:
			pos++
			s.emit(pos)
		}
	}
}
