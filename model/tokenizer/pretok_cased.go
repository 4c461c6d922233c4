package tokenizer

// casedStyle describes the GPT-4o (o200k) and Tekken patterns, which split
// words at case changes:
//
//	[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+C?
//	|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*C?
//	|\p{N}{1,maxDigits}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// where C is the optional contraction (?:'[sS]|'[tT]|'[rR][eE]|...). In the
// collapsed text a non-ASCII letter is neither [a-z] nor [A-Z], so it counts
// as both an "upper" and a "lower" letter.
type casedStyle struct {
	contractions bool // words may end with a contraction
	maxDigits    int  // \p{N}{1,maxDigits}
}

// upperLetter is (?=[\p{L}])([^a-z]); lowerLetter is (?=[\p{L}])([^A-Z]).
func upperLetter(r rune) bool { return reLetter(r) && !('a' <= r && r <= 'z') }
func lowerLetter(r rune) bool { return reLetter(r) && !('A' <= r && r <= 'Z') }

func (cs casedStyle) matcher() matcher {
	punct := optPlus(func(r rune) bool { return r == ' ' }, reOther)
	return func(c []rune, p, hi int) int {
		if e := cs.word(c, p, hi); e > 0 {
			return e
		}
		if reNumber(c[p]) {
			return runEnd(c, p, min(hi, p+cs.maxDigits), reNumber)
		}
		if e := punct(c, p, hi); e > 0 {
			return runEnd(c, e, hi, func(r rune) bool { return reNewline(r) || r == '/' })
		}
		return qwenStyle{newlinePlus: true}.whitespace(c, p, hi)
	}
}

// word matches the two letter alternatives at p, or returns -1.
func (cs casedStyle) word(c []rune, p, hi int) int {
	s := p
	if !reNewline(c[p]) && !reLetter(c[p]) && !reNumber(c[p]) {
		s = p + 1 // the optional leading character; without it no letter starts at p
	}
	u := runEnd(c, s, hi, upperLetter)
	end := -1
	// First alternative: upper* lower+, backtracking the upper run until a
	// lower letter can start.
	for k := u; k >= s; k-- {
		if k < hi && lowerLetter(c[k]) {
			end = runEnd(c, k, hi, lowerLetter)
			break
		}
	}
	// Second alternative: upper+ lower* (lower* is empty here, since the
	// first alternative found no lower letter).
	if end < 0 && u > s {
		end = u
	}
	if end < 0 {
		return -1
	}
	if cs.contractions && end < hi {
		if e := contractionAt(c, end, hi); e > 0 {
			end = e
		}
	}
	return end
}
