package grammar

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Parse compiles a grammar in llama.cpp's GBNF syntax, starting from the
// rule named "root".
func Parse(src string) (*Grammar, error) { return ParseFrom(src, "root") }

// maxNesting bounds how deep groups may nest.
const maxNesting = 256

// ParseFrom is Parse with another start rule.
func ParseFrom(src, root string) (*Grammar, error) {
	p := &parser{src: src, b: newBuilder()}
	if err := p.grammar(); err != nil {
		return nil, err
	}
	return p.b.finish(src, root)
}

// parser reads GBNF text into a builder.
type parser struct {
	src   string
	pos   int // byte offset of the next unread byte
	b     *builder
	depth int // nesting of groups at pos
}

// fail returns a SyntaxError at byte offset off.
func (p *parser) fail(off int, format string, args ...any) error {
	line, col := position(p.src, off)
	return &SyntaxError{Line: line, Column: col, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) eof() bool { return p.pos >= len(p.src) }
func (p *parser) peek() byte {
	if p.eof() {
		return 0
	}
	return p.src[p.pos]
}

// space skips blanks and comments, and newlines too when newlines is set.
func (p *parser) space(newlines bool) {
	for !p.eof() {
		switch c := p.src[p.pos]; {
		case c == ' ' || c == '\t':
			p.pos++
		case c == '#':
			for !p.eof() && p.src[p.pos] != '\n' {
				p.pos++
			}
		case (c == '\n' || c == '\r') && newlines:
			p.pos++
		default:
			return
		}
	}
}

func isWordChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// name reads a rule name.
func (p *parser) name() (string, error) {
	start := p.pos
	for !p.eof() && isWordChar(p.src[p.pos]) {
		p.pos++
	}
	if p.pos == start {
		return "", p.fail(start, "expected a rule name, found %s", p.describe())
	}
	return p.src[start:p.pos], nil
}

// describe names the byte at pos for an error.
func (p *parser) describe() string {
	if p.eof() {
		return "the end of the grammar"
	}
	r, _ := utf8.DecodeRuneInString(p.src[p.pos:])
	return strconv.QuoteRune(r)
}

// grammar reads every rule.
func (p *parser) grammar() error {
	p.space(true)
	if p.eof() {
		return p.fail(0, "the grammar is empty")
	}
	for !p.eof() {
		if err := p.rule(); err != nil {
			return err
		}
		p.space(true)
	}
	return nil
}

// rule reads "name ::= alternatives" up to the end of its line.
func (p *parser) rule() error {
	start := p.pos
	name, err := p.name()
	if err != nil {
		return err
	}
	p.space(false)
	if len(p.src)-p.pos < 3 || p.src[p.pos:p.pos+3] != "::=" {
		return p.fail(p.pos, "expected ::= after rule name %q, found %s", name, p.describe())
	}
	p.pos += 3
	p.space(true)
	i := p.b.symbol(name, start)
	if p.b.rules[i].defined {
		return p.fail(start, "rule %q is defined twice", name)
	}
	p.b.rules[i].defined = true
	alts, err := p.alternatives(i)
	if err != nil {
		return err
	}
	if err := p.b.grow(alts); err != nil {
		return p.fail(start, "%v", err)
	}
	p.b.rules[i].alts = alts
	if !p.eof() && p.peek() != '\n' && p.peek() != '\r' {
		return p.fail(p.pos, "expected the end of the line after rule %q, found %s", name, p.describe())
	}
	return nil
}

// alternatives reads "sequence | sequence ...".
func (p *parser) alternatives(owner int32) ([][]elem, error) {
	var alts [][]elem
	for {
		seq, err := p.sequence(owner)
		if err != nil {
			return nil, err
		}
		alts = append(alts, seq)
		if p.peek() != '|' {
			return alts, nil
		}
		p.pos++
		p.space(true)
	}
}

// sequence reads terms and their repetitions up to '|', ')' or the end
// of the rule.
func (p *parser) sequence(owner int32) ([]elem, error) {
	var seq []elem
	for !p.eof() {
		c := p.peek()
		if c == '|' || c == ')' || c == '\n' || c == '\r' {
			break
		}
		start := p.pos
		term, err := p.term(owner)
		if err != nil {
			return nil, err
		}
		p.space(p.depth > 0)
		if rep := p.peek(); rep == '*' || rep == '+' || rep == '?' || rep == '{' {
			lo, hi, err := p.repetition()
			if err != nil {
				return nil, err
			}
			if len(term) == 0 {
				// Repeating the empty string matches the empty string.
				p.space(p.depth > 0)
				continue
			}
			x := term[0]
			if len(term) != 1 {
				r, err := p.b.generated(owner, [][]elem{term})
				if err != nil {
					return nil, p.fail(start, "%v", err)
				}
				x = elem{elemRule, r}
			}
			if term, err = p.b.repeat(owner, x, lo, hi); err != nil {
				return nil, p.fail(start, "%v", err)
			}
			p.space(p.depth > 0)
		}
		seq = append(seq, term...)
	}
	return seq, nil
}

// repetition reads *, +, ? or {m}, {m,}, {m,n}; hi < 0 means unbounded.
func (p *parser) repetition() (lo, hi int, err error) {
	start := p.pos
	switch p.src[p.pos] {
	case '*':
		p.pos++
		return 0, -1, nil
	case '+':
		p.pos++
		return 1, -1, nil
	case '?':
		p.pos++
		return 0, 1, nil
	}
	p.pos++ // '{'
	p.space(false)
	if lo, err = p.integer(); err != nil {
		return 0, 0, err
	}
	p.space(false)
	hi = lo
	if p.peek() == ',' {
		p.pos++
		p.space(false)
		hi = -1
		if p.peek() != '}' {
			if hi, err = p.integer(); err != nil {
				return 0, 0, err
			}
			p.space(false)
		}
	}
	if p.peek() != '}' {
		return 0, 0, p.fail(p.pos, "expected } to close the repetition, found %s", p.describe())
	}
	p.pos++
	if hi >= 0 && hi < lo {
		return 0, 0, p.fail(start, "repetition {%d,%d} has its upper bound below its lower bound", lo, hi)
	}
	return lo, hi, nil
}

// integer reads a repetition bound.
func (p *parser) integer() (int, error) {
	start := p.pos
	n := 0
	for !p.eof() && p.peek() >= '0' && p.peek() <= '9' {
		n = n*10 + int(p.peek()-'0')
		if n > maxRepeat {
			return 0, p.fail(start, "repetition bound above %d", maxRepeat)
		}
		p.pos++
	}
	if p.pos == start {
		return 0, p.fail(start, "expected a number, found %s", p.describe())
	}
	return n, nil
}

// term reads one literal, class, '.', rule name or group.
func (p *parser) term(owner int32) ([]elem, error) {
	start := p.pos
	switch c := p.peek(); {
	case c == '"':
		return p.literal()
	case c == '[':
		return p.class()
	case c == '.':
		p.pos++
		ci, err := p.b.addClass(class{negated: true})
		if err != nil {
			return nil, p.fail(start, "%v", err)
		}
		return []elem{{elemChar, ci}}, nil
	case c == '(':
		p.pos++
		if p.depth++; p.depth > maxNesting {
			return nil, p.fail(start, "groups nest deeper than %d", maxNesting)
		}
		p.space(true)
		alts, err := p.alternatives(owner)
		if err != nil {
			return nil, err
		}
		if p.peek() != ')' {
			return nil, p.fail(p.pos, "expected ) to close the group opened at column %d, found %s", columnOf(p.src, start), p.describe())
		}
		p.pos++
		p.depth--
		r, err := p.b.generated(owner, alts)
		if err != nil {
			return nil, p.fail(start, "%v", err)
		}
		return []elem{{elemRule, r}}, nil
	case isWordChar(c):
		name, err := p.name()
		if err != nil {
			return nil, err
		}
		return []elem{{elemRule, p.b.symbol(name, start)}}, nil
	}
	return nil, p.fail(start, "unexpected %s", p.describe())
}

func columnOf(src string, off int) int {
	_, col := position(src, off)
	return col
}

// literal reads a double-quoted string: one element per character.
func (p *parser) literal() ([]elem, error) {
	start := p.pos
	p.pos++
	var out []elem
	for {
		if p.eof() || p.peek() == '\n' {
			return nil, p.fail(start, "string literal is not closed")
		}
		if p.peek() == '"' {
			p.pos++
			return out, nil
		}
		c, err := p.char()
		if err != nil {
			return nil, err
		}
		ci, err := p.b.charClass(c)
		if err != nil {
			return nil, p.fail(start, "%v", err)
		}
		out = append(out, elem{elemChar, ci})
	}
}

// class reads [...] or [^...] with single characters and ranges a-z.
func (p *parser) class() ([]elem, error) {
	start := p.pos
	p.pos++
	var cl class
	if p.peek() == '^' {
		cl.negated = true
		p.pos++
	}
	for {
		if p.eof() || p.peek() == '\n' {
			return nil, p.fail(start, "character class is not closed")
		}
		if p.peek() == ']' {
			p.pos++
			break
		}
		at := p.pos
		lo, err := p.char()
		if err != nil {
			return nil, err
		}
		hi := lo
		if p.peek() == '-' && p.pos+1 < len(p.src) && p.src[p.pos+1] != ']' {
			p.pos++
			if hi, err = p.char(); err != nil {
				return nil, err
			}
			if hi < lo {
				return nil, p.fail(at, "range %q-%q is empty", lo, hi)
			}
		}
		cl.ranges = append(cl.ranges, runeRange{lo, hi})
	}
	ci, err := p.b.addClass(cl)
	if err != nil {
		return nil, p.fail(start, "%v", err)
	}
	return []elem{{elemChar, ci}}, nil
}

// char reads one character of a literal or class, with escapes.
func (p *parser) char() (rune, error) {
	start := p.pos
	if p.peek() != '\\' {
		r, n := utf8.DecodeRuneInString(p.src[p.pos:])
		if r == utf8.RuneError && n <= 1 {
			return 0, p.fail(start, "invalid UTF-8")
		}
		p.pos += n
		return r, nil
	}
	p.pos++
	if p.eof() {
		return 0, p.fail(start, "escape at the end of the grammar")
	}
	c := p.src[p.pos]
	p.pos++
	switch c {
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case '\\', '"', '[', ']', '-', '^', '/', '\'':
		return rune(c), nil
	case 'x':
		return p.hex(start, 2)
	case 'u':
		return p.hex(start, 4)
	case 'U':
		return p.hex(start, 8)
	}
	return 0, p.fail(start, "unknown escape \\%c", c)
}

// hex reads n hexadecimal digits of an escape that began at start.
func (p *parser) hex(start, n int) (rune, error) {
	if len(p.src)-p.pos < n {
		return 0, p.fail(start, "escape needs %d hexadecimal digits", n)
	}
	v, err := strconv.ParseUint(p.src[p.pos:p.pos+n], 16, 32)
	if err != nil {
		return 0, p.fail(start, "escape needs %d hexadecimal digits", n)
	}
	if v > utf8.MaxRune {
		return 0, p.fail(start, "escape names code point %#x, beyond Unicode", v)
	}
	p.pos += n
	return rune(v), nil
}
