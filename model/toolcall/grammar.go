package toolcall

import (
	"encoding/json"
	"fmt"
	"strings"

	"llmserve/grammar"
)

// Tool is a function the model may call.
type Tool struct {
	Name       string
	Parameters json.RawMessage // a JSON schema of the arguments object; nil: any object
}

// ToolError says which tool's parameters cannot be translated.
type ToolError struct {
	Index int   // the tool's index in the list given to Grammar
	Err   error // a *grammar.SchemaError or a JSON fault
}

func (e *ToolError) Error() string { return fmt.Sprintf("tool %d: %v", e.Index, e.Err) }
func (e *ToolError) Unwrap() error { return e.Err }

// Grammar returns the GBNF (start rule "root") of the calls f writes to
// one of tools, or to several in a row when parallel, each call's
// arguments valid against its tool's parameters. Nothing may come before
// or after the calls.
func Grammar(f Format, tools []Tool, parallel bool) (string, error) {
	if len(tools) == 0 {
		return "", fmt.Errorf("toolcall: a grammar needs at least one tool")
	}
	var b strings.Builder
	alts := make([]string, len(tools))
	for i, t := range tools {
		params := t.Parameters
		if len(params) == 0 || string(params) == "null" {
			params = json.RawMessage(`{"type":"object"}`)
		}
		src, err := grammar.SchemaGBNF(params, grammar.SchemaOptions{})
		if err != nil {
			return "", &ToolError{Index: i, Err: err}
		}
		prefix := fmt.Sprintf("t%d-", i)
		b.WriteString(renameRules(src, prefix))
		head, err := json.Marshal(map[string]string{"name": t.Name})
		if err != nil {
			return "", &ToolError{Index: i, Err: err}
		}
		// {"name": "NAME", "arguments": ARGS}
		open := strings.TrimSuffix(string(head), "}") + `, "` + f.argumentsKey() + `": `
		open = strings.Replace(open, `":"`, `": "`, 1)
		alts[i] = gbnfLiteral(open) + " " + prefix + "root " + gbnfLiteral("}")
	}
	fmt.Fprintf(&b, "call ::= %s\n", strings.Join(alts, " | "))
	var one, sep, before, after string
	switch f {
	case Llama3:
		one, sep = "call", `"; "`
	case Mistral:
		one, sep, before, after = "call", `", "`, `"[" `, ` "]"`
	default:
		b.WriteString(`tool-call ::= "<tool_call>\n" call "\n</tool_call>"` + "\n")
		one, sep = "tool-call", `"\n"`
	}
	if parallel {
		fmt.Fprintf(&b, "root ::= %s%s ( %s %s )*%s\n", before, one, sep, one, after)
	} else {
		fmt.Fprintf(&b, "root ::= %s%s%s\n", before, one, after)
	}
	return b.String(), nil
}

// gbnfLiteral quotes s as a GBNF string literal.
func gbnfLiteral(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "\t", `\t`)
	return `"` + r.Replace(s) + `"`
}

// renameRules puts prefix before every rule name of a GBNF text: every
// word outside string literals, character classes, repetition counts and
// comments.
func renameRules(src, prefix string) string {
	var b strings.Builder
	b.Grow(len(src) + len(src)/4)
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '"' || c == '[':
			end := closing(src, i)
			b.WriteString(src[i:end])
			i = end
		case c == '{':
			end := strings.IndexByte(src[i:], '}')
			if end < 0 {
				end = len(src) - i - 1
			}
			b.WriteString(src[i : i+end+1])
			i += end + 1
		case c == '#':
			end := strings.IndexByte(src[i:], '\n')
			if end < 0 {
				end = len(src) - i
			}
			b.WriteString(src[i : i+end])
			i += end
		case isWordChar(c):
			j := i
			for j < len(src) && isWordChar(src[j]) {
				j++
			}
			b.WriteString(prefix)
			b.WriteString(src[i:j])
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// closing returns the index past the literal or class that opens at i,
// its backslash escapes skipped.
func closing(src string, i int) int {
	end := byte('"')
	if src[i] == '[' {
		end = ']'
	}
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			j++
		case end:
			return j + 1
		}
	}
	return len(src)
}

func isWordChar(c byte) bool {
	return c == '-' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
