package chat

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// The Jinja engine trims text next to a tag by looking for the nearest text
// segment even when other tags stand in between, so "{{ x }}\n{% endfor %}"
// loses its newline and "a\n{{ x }}{%- if %}" loses the one after "a"; it
// also keeps a template's final newline. Python Jinja2, which transformers
// uses, does none of that. resolveWhitespace therefore applies Jinja2's
// whitespace rules itself, with transformers' settings (trim_blocks,
// lstrip_blocks, keep_trailing_newline off), and hands the engine a
// template in which every piece of text has become a string literal
// ({{ '...' }}) and no tag carries a - or + marker: the engine is left
// nothing to trim.
//
// The rules, as Jinja2's lexer applies them:
//   - newlines (\r\n, \r) become \n and one final newline is dropped;
//   - {%- {{- {#- strip all whitespace before the tag, -%} -}} -#} all
//     after it;
//   - lstrip_blocks: before {% and {# without a sign, spaces and tabs from
//     the start of the line up to the tag are dropped (the start of a line
//     is after a \n in the text, or the text's start when the preceding tag
//     ended with a newline or there is none); {%+ keeps them;
//   - trim_blocks: one \n right after %} or #} is dropped; +%} keeps it;
//   - {% raw %}...{% endraw %} is text.

// endRaw finds the tag closing a raw block: its left sign, its right sign.
var endRaw = regexp.MustCompile(`\{%([-+]?)\s*endraw\s*([-+]?)%\}`)

// resolveWhitespace returns src with Jinja2's whitespace control applied
// and all text turned into string literals (see above).
func resolveWhitespace(src string) (string, error) {
	src = strings.ReplaceAll(src, "\r\n", "\n")
	src = strings.ReplaceAll(src, "\r", "\n")
	src = strings.TrimSuffix(src, "\n")

	var out strings.Builder
	lineStart := true // the last tag consumed ended with a newline
	pos := 0
	for {
		open := nextTag(src, pos)
		if open < 0 {
			writeText(&out, src[pos:])
			return out.String(), nil
		}
		kind := src[open+1] // '{', '%' or '#'
		start := open + 2
		left := sign(src, start)
		if left != 0 {
			start++
		}
		text := src[pos:open]
		block := kind != '{'
		switch {
		case left == '-':
			text = strings.TrimRightFunc(text, isSpace)
		case left != '+' && block:
			text = lstripBlock(text, lineStart)
		}

		closer := "}}"
		if kind == '%' {
			closer = "%}"
		} else if kind == '#' {
			closer = "#}"
		}
		end := tagEnd(src, start, kind, closer)
		if end < 0 {
			return "", fmt.Errorf("unclosed tag at line %d", 1+strings.Count(src[:open], "\n"))
		}
		body := src[start:end]
		right := byte(0)
		if n := len(body); n > 0 && (body[n-1] == '-' || body[n-1] == '+' && block) {
			right, body = body[n-1], body[:n-1]
		}
		pos = end + 2

		if kind == '%' && strings.TrimSpace(body) == "raw" {
			writeText(&out, text)
			var err error
			if pos, err = rawBlock(&out, src, pos, right); err != nil {
				return "", err
			}
			lineStart = src[pos-1] == '\n'
			continue
		}

		pos = trimAfter(src, pos, right, block)
		lineStart = src[pos-1] == '\n'
		writeText(&out, text)
		switch kind {
		case '{':
			out.WriteString("{{" + body + "}}")
		case '%':
			out.WriteString("{%" + body + "%}")
		}
	}
}

// rawBlock writes the text of a raw block whose opening tag ends at pos
// (right is its right sign) and returns the position after {% endraw %}.
func rawBlock(out *strings.Builder, src string, pos int, right byte) (int, error) {
	if right == '-' {
		pos = trimAfter(src, pos, right, true)
	}
	lineStart := src[pos-1] == '\n'
	m := endRaw.FindStringSubmatchIndex(src[pos:])
	if m == nil {
		return 0, fmt.Errorf("raw block at line %d: no endraw", 1+strings.Count(src[:pos], "\n"))
	}
	text := src[pos : pos+m[0]]
	switch {
	case m[3] > m[2] && src[pos+m[2]] == '-':
		text = strings.TrimRightFunc(text, isSpace)
	case m[3] == m[2]:
		text = lstripBlock(text, lineStart)
	}
	writeText(out, text)
	endSign := byte(0)
	if m[5] > m[4] {
		endSign = src[pos+m[4]]
	}
	return trimAfter(src, pos+m[1], endSign, true), nil
}

// nextTag returns the index of the next "{{", "{%" or "{#" at or after pos,
// or -1.
func nextTag(src string, pos int) int {
	for i := pos; i+1 < len(src); i++ {
		if src[i] == '{' && (src[i+1] == '{' || src[i+1] == '%' || src[i+1] == '#') {
			return i
		}
	}
	return -1
}

// sign returns the whitespace-control sign at src[i] ('-' or '+'), or 0.
func sign(src string, i int) byte {
	if i < len(src) && (src[i] == '-' || src[i] == '+') {
		return src[i]
	}
	return 0
}

// tagEnd returns the index of the closer of a tag whose body starts at
// start, skipping quoted strings in expressions and statements, or -1.
func tagEnd(src string, start int, kind byte, closer string) int {
	if kind == '#' {
		if i := strings.Index(src[start:], closer); i >= 0 {
			return start + i
		}
		return -1
	}
	for i := start; i+1 < len(src); i++ {
		switch c := src[i]; {
		case c == '\'' || c == '"':
			for i++; i < len(src) && src[i] != c; i++ {
				if src[i] == '\\' {
					i++
				}
			}
		case src[i:i+2] == closer:
			return i
		}
	}
	return -1
}

// trimAfter returns the position after the whitespace a tag ending at pos
// removes: all of it after a - sign, one newline after a block or comment
// tag without a + sign (trim_blocks).
func trimAfter(src string, pos int, right byte, block bool) int {
	switch {
	case right == '-':
		rest := strings.TrimLeftFunc(src[pos:], isSpace)
		return len(src) - len(rest)
	case right != '+' && block && pos < len(src) && src[pos] == '\n':
		return pos + 1
	}
	return pos
}

// lstripBlock drops the whitespace between the start of the line and a
// block tag that follows text (lstrip_blocks). lineStart says whether the
// text itself begins a line.
func lstripBlock(text string, lineStart bool) string {
	l := strings.LastIndexByte(text, '\n') + 1
	if (l > 0 || lineStart) && l < len(text) && strings.TrimLeftFunc(text[l:], isSpace) == "" {
		return text[:l]
	}
	return text
}

// isSpace matches Python's str.isspace, which Jinja2's stripping follows.
func isSpace(r rune) bool {
	return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f
}

// writeText writes text as a string literal expression.
func writeText(out *strings.Builder, text string) {
	if text == "" {
		return
	}
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
	out.WriteString("{{ '")
	r.WriteString(out, text)
	out.WriteString("' }}")
}
