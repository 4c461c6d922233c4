package toolcall

import (
	"encoding/json"
	"strings"
)

// mistralTag starts Mistral's calls; it is a control token, so decoded
// text usually lacks it.
const mistralTag = "[TOOL_CALLS]"

// parseMistral reads a JSON array of calls after [TOOL_CALLS], or bare:
// from the first "[" after which the rest of the text is that array.
func parseMistral(text string) (int, []Call, bool) {
	if at := strings.Index(text, mistralTag); at >= 0 {
		calls, ok := mistralCalls(text[at+len(mistralTag):])
		return at, calls, ok
	}
	for at := strings.IndexByte(text, '['); at >= 0; {
		if calls, ok := mistralCalls(text[at:]); ok {
			return at, calls, true
		}
		next := strings.IndexByte(text[at+1:], '[')
		if next < 0 {
			break
		}
		at += 1 + next
	}
	return 0, nil, false
}

// mistralCalls reads the array of calls that makes up all of s.
func mistralCalls(s string) ([]Call, bool) {
	raw, n, ok := readValue(s)
	if !ok {
		return nil, false
	}
	if rest, _ := skipSpace(s[n:]); rest != "" {
		return nil, false
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil || len(list) == 0 {
		return nil, false
	}
	calls := make([]Call, len(list))
	for i, e := range list {
		if calls[i], ok = callOf(e, "arguments"); !ok {
			return nil, false
		}
	}
	return calls, true
}
