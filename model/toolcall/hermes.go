package toolcall

import "strings"

// Hermes' markers.
const (
	hermesOpen  = "<tool_call>"
	hermesClose = "</tool_call>"
)

// parseHermes reads <tool_call>JSON</tool_call> blocks, separated by
// whitespace, to the end of the text; the last close tag may be missing
// (generation stopped at it). It returns where the first block starts.
func parseHermes(text string) (int, []Call, bool) {
	at := strings.Index(text, hermesOpen)
	if at < 0 {
		return 0, nil, false
	}
	var calls []Call
	rest := text[at:]
	for rest != "" {
		var ok bool
		if rest, ok = strings.CutPrefix(rest, hermesOpen); !ok {
			return 0, nil, false
		}
		raw, n, ok := readValue(rest)
		if !ok {
			return 0, nil, false
		}
		c, ok := callOf(raw, "arguments")
		if !ok {
			return 0, nil, false
		}
		calls = append(calls, c)
		rest, _ = skipSpace(rest[n:])
		if rest == "" {
			break
		}
		if rest, ok = strings.CutPrefix(rest, hermesClose); !ok {
			return 0, nil, false
		}
		rest, _ = skipSpace(rest)
	}
	return at, calls, true
}
