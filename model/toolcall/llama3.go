package toolcall

import "strings"

// llamaTag starts a Llama 3 tool call; it is a control token, so decoded
// text usually lacks it.
const llamaTag = "<|python_tag|>"

// parseLlama3 reads calls after <|python_tag|>, or bare: from the first
// "{" after which the rest of the text is calls (objects with a "name",
// separated by ";" or whitespace). It returns where the calls start.
func parseLlama3(text string) (int, []Call, bool) {
	if at := strings.Index(text, llamaTag); at >= 0 {
		calls, ok := llamaCalls(text[at+len(llamaTag):])
		return at, calls, ok
	}
	for at := strings.IndexByte(text, '{'); at >= 0; {
		if calls, ok := llamaCalls(text[at:]); ok {
			return at, calls, true
		}
		next := strings.IndexByte(text[at+1:], '{')
		if next < 0 {
			break
		}
		at += 1 + next
	}
	return 0, nil, false
}

// llamaCalls reads one or more call objects that make up all of s.
func llamaCalls(s string) ([]Call, bool) {
	var calls []Call
	s, _ = skipSpace(s)
	for s != "" {
		raw, n, ok := readValue(s)
		if !ok {
			return nil, false
		}
		c, ok := callOf(raw, "parameters")
		if !ok {
			return nil, false
		}
		calls = append(calls, c)
		s, _ = skipSpace(s[n:])
		s = strings.TrimPrefix(s, ";")
		s, _ = skipSpace(s)
	}
	return calls, len(calls) > 0
}
