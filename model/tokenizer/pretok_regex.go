package tokenizer

// Pre-tokenizer patterns other than the GPT-2 and Llama-3 ones run, in
// llama.cpp, through std::regex (ECMAScript: the first alternative that
// matches wins, quantifiers are greedy and backtrack). They are written here
// as anchored matchers over code points. Like llama.cpp, a pattern that uses
// \p{..} classes sees a "collapsed" text in which every code point >= 128 is
// replaced by one marker for its category, so that \p{L} means [A-Za-z] or a
// non-ASCII letter and \s means ASCII space, \t..\r or non-ASCII White_Space.
// Patterns without \p classes see the code points themselves, with non-ASCII
// White_Space replaced by \v (so \s matches them and literal ranges do not).

// Markers of the collapsed text.
const (
	collapsedSpace  = 0x0B
	collapsedOther  = 0xD0
	collapsedNumber = 0xD1
	collapsedLetter = 0xD2
	collapsedPunct  = 0xD3
	collapsedMark   = 0xD4
	collapsedSymbol = 0xD5
)

// collapse returns the collapsed form of cpts.
func collapse(cpts []rune) []rune {
	out := make([]rune, len(cpts))
	for i, r := range cpts {
		if r < 128 {
			out[i] = r
			continue
		}
		f := flagsOf(r)
		switch {
		case f.isWhitespace():
			out[i] = collapsedSpace
		case f&flagNumber != 0:
			out[i] = collapsedNumber
		case f&flagLetter != 0:
			out[i] = collapsedLetter
		case f&flagPunct != 0:
			out[i] = collapsedPunct
		case f&flagMark != 0:
			out[i] = collapsedMark
		case f&flagSymbol != 0:
			out[i] = collapsedSymbol
		default:
			out[i] = collapsedOther
		}
	}
	return out
}

// spaceToVT returns cpts with non-ASCII White_Space replaced by \v.
func spaceToVT(cpts []rune) []rune {
	out := make([]rune, len(cpts))
	for i, r := range cpts {
		if r > 0x7F && flagsOf(r).isWhitespace() {
			r = collapsedSpace
		}
		out[i] = r
	}
	return out
}

// Classes over collapsed (or \v-substituted) code points.
func reSpace(r rune) bool { return r == ' ' || (r >= '\t' && r <= '\r') }
func reLetter(r rune) bool {
	return ('A' <= r && r <= 'Z') || ('a' <= r && r <= 'z') || r == collapsedLetter
}
func reNumber(r rune) bool { return ('0' <= r && r <= '9') || r == collapsedNumber }
func reDigit(r rune) bool  { return '0' <= r && r <= '9' }
func rePunct(r rune) bool {
	switch r {
	case '!', '"', '#', '%', '&', '\'', '(', ')', '*', ',', '-', '.', '/', ':', ';', '?', '@', '[', '\\', ']', '_', '{', '}', collapsedPunct:
		return true
	}
	return false
}
func reNewline(r rune) bool { return r == '\r' || r == '\n' }

// reOther is [^\s\p{L}\p{N}].
func reOther(r rune) bool { return !reSpace(r) && !reLetter(r) && !reNumber(r) }

// matcher returns the end of a match of its pattern anchored at p inside
// c[:hi], or -1.
type matcher func(c []rune, p, hi int) int

// runEnd returns the end of the run of class in starting at p.
func runEnd(c []rune, p, hi int, in func(rune) bool) int {
	for p < hi && in(c[p]) {
		p++
	}
	return p
}

// plus matches in+.
func plus(in func(rune) bool) matcher {
	return func(c []rune, p, hi int) int {
		if e := runEnd(c, p, hi, in); e > p {
			return e
		}
		return -1
	}
}

// one matches a single code point of class in.
func one(in func(rune) bool) matcher {
	return func(c []rune, p, hi int) int {
		if p < hi && in(c[p]) {
			return p + 1
		}
		return -1
	}
}

// optPlus matches opt?in+ (greedy optional, backtracking to without it).
func optPlus(opt, in func(rune) bool) matcher {
	return func(c []rune, p, hi int) int {
		if p+1 < hi && opt(c[p]) && in(c[p+1]) {
			return runEnd(c, p+1, hi, in)
		}
		if e := runEnd(c, p, hi, in); e > p {
			return e
		}
		return -1
	}
}

// regexSplitter splits every chunk at the matches of m found left to right,
// like std::regex_iterator: text between matches becomes a word too.
// prepare, when set, maps the code points to what the pattern sees.
func regexSplitter(m matcher, prepare func([]rune) []rune) splitter {
	return func(cpts []rune, offsets []int) []int {
		c := cpts
		if prepare != nil {
			c = prepare(cpts)
		}
		out := make([]int, 0, len(offsets))
		start := 0
		for _, n := range offsets {
			lo, hi := start, start+n
			cur := lo
			for p := lo; p < hi; {
				e := m(c[:hi], p, hi)
				if e <= p {
					p++
					continue
				}
				if p > cur {
					out = append(out, p-cur)
				}
				out = append(out, e-p)
				cur, p = e, e
			}
			if cur < hi {
				out = append(out, hi-cur)
			}
			start = hi
		}
		return out
	}
}

// qwenStyle describes the family of patterns
// (?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,maxDigits}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// and its variants.
type qwenStyle struct {
	contractions bool // with the leading contraction alternative
	maxDigits    int  // \p{N}{1,maxDigits}; 0 means \p{N}+
	punctNewline bool // punctuation runs take trailing [\r\n]*
	newlinePlus  bool // \s*[\r\n]+ rather than \s*[\r\n]
}

func (q qwenStyle) matcher() matcher {
	letters := optPlus(func(r rune) bool { return !reNewline(r) && !reLetter(r) && !reNumber(r) }, reLetter)
	punct := optPlus(func(r rune) bool { return r == ' ' }, reOther)
	return func(c []rune, p, hi int) int {
		if q.contractions {
			if e := contractionAt(c, p, hi); e > 0 {
				return e
			}
		}
		if e := letters(c, p, hi); e > 0 {
			return e
		}
		if reNumber(c[p]) {
			if q.maxDigits > 0 {
				return runEnd(c, p, min(hi, p+q.maxDigits), reNumber)
			}
			return runEnd(c, p, hi, reNumber)
		}
		if e := punct(c, p, hi); e > 0 {
			if q.punctNewline {
				e = runEnd(c, e, hi, reNewline)
			}
			return e
		}
		return q.whitespace(c, p, hi)
	}
}

// whitespace matches \s*[\r\n]+ (or \s*[\r\n]), \s+(?!\S) and \s+ at p.
func (q qwenStyle) whitespace(c []rune, p, hi int) int {
	ws := runEnd(c, p, hi, reSpace)
	if ws == p {
		return -1
	}
	// \s*[\r\n]+ (or [\r\n]): the last newline of the run ends the match.
	for i := ws - 1; i >= p; i-- {
		if reNewline(c[i]) {
			if q.newlinePlus {
				return runEnd(c, i, hi, reNewline)
			}
			return i + 1
		}
	}
	// \s+(?!\S)
	if ws == hi {
		return ws
	}
	if ws-p >= 2 {
		return ws - 1
	}
	// \s+
	return ws
}

// contractionAt matches '[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD].
func contractionAt(c []rune, p, hi int) int {
	if c[p] != '\'' || p+1 >= hi {
		return -1
	}
	c1 := lowerASCII(c[p+1])
	if c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd' {
		return p + 2
	}
	if p+2 < hi {
		c2 := lowerASCII(c[p+2])
		if (c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l') {
			return p + 3
		}
	}
	return -1
}

// inRanges builds a class from inclusive code point ranges.
func inRanges(ranges ...[2]rune) func(rune) bool {
	return func(r rune) bool {
		for _, rg := range ranges {
			if rg[0] <= r && r <= rg[1] {
				return true
			}
		}
		return false
	}
}

// anyOf builds a class from a set of code points.
func anyOf(set string) func(rune) bool {
	return func(r rune) bool {
		for _, s := range set {
			if s == r {
				return true
			}
		}
		return false
	}
}

func or(classes ...func(rune) bool) func(rune) bool {
	return func(r rune) bool {
		for _, in := range classes {
			if in(r) {
				return true
			}
		}
		return false
	}
}

func not(in func(rune) bool) func(rune) bool { return func(r rune) bool { return !in(r) } }

// splitTrailingSpace splits by \s+$: the whitespace run that ends a chunk
// (the leftmost place \s+$ can match) becomes a word of its own. It is a
// splitter rather than a matcher so that long whitespace runs cost linear
// time.
func splitTrailingSpace(cpts []rune, offsets []int) []int {
	c := spaceToVT(cpts)
	out := make([]int, 0, len(offsets))
	start := 0
	for _, n := range offsets {
		lo, hi := start, start+n
		ts := hi
		for ts > lo && reSpace(c[ts-1]) {
			ts--
		}
		if ts > lo {
			out = append(out, ts-lo)
		}
		if hi > ts {
			out = append(out, hi-ts)
		}
		start = hi
	}
	return out
}

// digits3 matches [0-9][0-9][0-9].
func digits3(c []rune, p, hi int) int {
	if p+3 <= hi && reDigit(c[p]) && reDigit(c[p+1]) && reDigit(c[p+2]) {
		return p + 3
	}
	return -1
}
