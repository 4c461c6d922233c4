package toolcall

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Call is one function call the model wrote.
type Call struct {
	Name      string
	Arguments string // a JSON object, compacted
	ID        string // the id the model wrote with the call (Mistral), or ""
}

// Parse splits a completed output into its text and its calls. Text
// before the first call is content; an output whose calls do not parse is
// all content and has no calls.
func Parse(f Format, text string) (content string, calls []Call) {
	var (
		at int
		ok bool
	)
	switch f {
	case Llama3:
		at, calls, ok = parseLlama3(text)
	case Mistral:
		at, calls, ok = parseMistral(text)
	default:
		at, calls, ok = parseHermes(text)
	}
	if !ok || len(calls) == 0 {
		return text, nil
	}
	return strings.TrimRight(text[:at], " \t\r\n"), calls
}

// readValue decodes the JSON value at the start of s (after whitespace)
// and returns it with the bytes it took.
func readValue(s string) (json.RawMessage, int, bool) {
	dec := json.NewDecoder(strings.NewReader(s))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, 0, false
	}
	return raw, int(dec.InputOffset()), true
}

// callOf reads one call object: a "name" string and the arguments under
// key (an object, or a string holding one), "arguments" or "parameters"
// accepted whichever the format names; a missing one is {}.
func callOf(raw json.RawMessage, key string) (Call, bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return Call{}, false
	}
	var c Call
	if json.Unmarshal(obj["name"], &c.Name) != nil || c.Name == "" {
		return Call{}, false
	}
	if id, ok := obj["id"]; ok {
		if json.Unmarshal(id, &c.ID) != nil {
			return Call{}, false
		}
	}
	args, ok := obj[key]
	if !ok {
		if key == "arguments" {
			args, ok = obj["parameters"]
		} else {
			args, ok = obj["arguments"]
		}
	}
	if !ok || bytes.Equal(bytes.TrimSpace(args), []byte("null")) {
		c.Arguments = "{}"
		return c, true
	}
	var s string
	if json.Unmarshal(args, &s) == nil {
		args = json.RawMessage(s) // arguments sent as a JSON string
	}
	var buf bytes.Buffer
	if json.Compact(&buf, args) != nil || buf.Len() == 0 || buf.Bytes()[0] != '{' {
		return Call{}, false
	}
	c.Arguments = buf.String()
	return c, true
}

// skipSpace returns s without its leading whitespace, and how much that was.
func skipSpace(s string) (string, int) {
	t := strings.TrimLeft(s, " \t\r\n")
	return t, len(s) - len(t)
}

// SafePrefix returns how much of text, a prefix of an output still being
// generated, is content for certain: the text before anything that could
// be the start of a call, less the whitespace that ends it. The rest must
// wait for the output to end.
func SafePrefix(f Format, text string) int {
	var marker string
	at := len(text)
	switch f {
	case Llama3:
		marker = llamaTag
		if i := strings.IndexByte(text, '{'); i >= 0 {
			at = i
		}
	case Mistral:
		marker = mistralTag
		if i := strings.IndexByte(text, '['); i >= 0 {
			at = i
		}
	default:
		marker = hermesOpen
	}
	if i := strings.Index(text, marker); i >= 0 && i < at {
		at = i
	}
	// A marker may be cut at the end of the text so far.
	for k := min(len(marker)-1, len(text)); k > 0; k-- {
		if strings.HasSuffix(text, marker[:k]) {
			at = min(at, len(text)-k)
			break
		}
	}
	// Whitespace before a call is not content (Parse trims it).
	return len(strings.TrimRight(text[:at], " \t\r\n"))
}
