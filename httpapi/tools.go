package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"llmserve/decode"
	"llmserve/grammar"
	"llmserve/model/toolcall"
)

// toolSet is the tools of a chat request that the model may call.
type toolSet struct {
	format   toolcall.Format // the template's call syntax
	tools    []toolcall.Tool
	raw      json.RawMessage // the tools as sent, for the template
	choice   string          // "auto", "required" or "function" (a named one)
	named    string          // the function tool_choice names
	parallel bool            // parallel_tool_calls: more than one call per answer
}

// toolName is what OpenAI allows as a function name.
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,64}$`)

// toolsOf reads tools, tool_choice and parallel_tool_calls for a template
// whose source is tmpl. It returns nil when no tool may be called: none
// sent, or tool_choice "none" (the tools are then not rendered either).
func (g *genParams) toolsOf(tmpl string) (*toolSet, error) {
	choice, named, err := toolChoice(g.ToolChoice)
	if err != nil {
		return nil, err
	}
	if choice == "none" {
		return nil, nil
	}
	if !hasEntries(g.Tools) {
		if choice != "auto" {
			return nil, invalid("tool_choice", "tool_choice %q needs tools", choice)
		}
		return nil, nil
	}
	var list []struct {
		Type     string `json:"type"`
		Function *struct {
			Name        string          `json:"name"`
			Description *string         `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
			Strict      *bool           `json:"strict"`
		} `json:"function"`
	}
	if json.Unmarshal(g.Tools, &list) != nil {
		return nil, invalid("tools", `tools must be an array of {"type":"function","function":{"name":...,"parameters":{...}}}`)
	}
	ts := &toolSet{raw: g.Tools, choice: choice, named: named, parallel: g.ParallelToolCalls == nil || *g.ParallelToolCalls}
	ts.format, _ = toolcall.Detect(tmpl)
	seen := map[string]bool{}
	for i, t := range list {
		at := fmt.Sprintf("tools[%d]", i)
		switch {
		case t.Type != "function":
			return nil, invalid(at+".type", `%s.type must be "function", not %q`, at, t.Type)
		case t.Function == nil:
			return nil, invalid(at+".function", "%s.function is required", at)
		case !toolName.MatchString(t.Function.Name):
			return nil, invalid(at+".function.name", "%s.function.name must be 1 to 64 letters, digits, '_', '-' or '.', not %q", at, t.Function.Name)
		case seen[t.Function.Name]:
			return nil, invalid(at+".function.name", "%s.function.name %q is already the name of another tool", at, t.Function.Name)
		}
		if p := bytes.TrimSpace(t.Function.Parameters); present(p) && p[0] != '{' {
			return nil, invalid(at+".function.parameters", "%s.function.parameters must be a JSON schema object", at)
		}
		seen[t.Function.Name] = true
		ts.tools = append(ts.tools, toolcall.Tool{Name: t.Function.Name, Parameters: t.Function.Parameters})
	}
	if choice == "function" && !seen[named] {
		return nil, invalid("tool_choice.function.name", "tool_choice names %q, which is not among the tools", named)
	}
	return ts, nil
}

// toolChoice reads tool_choice: "none", "auto" (also when absent),
// "required", or {"type":"function","function":{"name":...}}, which it
// returns as "function" and the name.
func toolChoice(raw json.RawMessage) (choice, name string, err error) {
	if !present(raw) {
		return "auto", "", nil
	}
	const forms = `tool_choice must be "none", "auto", "required" or {"type":"function","function":{"name":...}}`
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "none", "auto", "required":
			return s, "", nil
		}
		return "", "", invalid("tool_choice", "%s, not %q", forms, s)
	}
	var obj struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(raw, &obj) != nil || obj.Type != "function" || obj.Function.Name == "" {
		return "", "", invalid("tool_choice", forms)
	}
	return "function", obj.Function.Name, nil
}

// constraint is the grammar that enforces tool_choice "required" or a
// named function; nil for "auto".
func (ts *toolSet) constraint() (*constraint, error) {
	tools := ts.tools
	switch ts.choice {
	case "auto":
		return nil, nil
	case "function":
		for i, t := range ts.tools {
			if t.Name == ts.named {
				tools = ts.tools[i : i+1]
			}
		}
	}
	src, err := toolcall.Grammar(ts.format, tools, ts.parallel && ts.choice == "required")
	if err != nil {
		var te *toolcall.ToolError
		if errors.As(err, &te) {
			index := te.Index
			if ts.choice == "function" {
				for i, t := range ts.tools {
					if t.Name == ts.named {
						index = i
					}
				}
			}
			return nil, schemaError(fmt.Sprintf("tools[%d].function.parameters", index), te.Err)
		}
		return nil, invalid("tools", "tools: %v", err)
	}
	return &constraint{param: "tool_choice", gbnf: src}, nil
}

// chatConstraint reads what a chat request allows the model to write: its
// tools (nil when none may be called) and the engine of the grammar that
// response_format, grammar, json_schema or tool_choice asks for (nil when
// none does); only one of these may constrain the output.
func (s *Server) chatConstraint(m *Model, g *genParams, base decode.Request) (*toolSet, *grammar.Engine, error) {
	ts, err := g.toolsOf(m.Chat.Template().Source())
	if err != nil {
		return nil, nil, err
	}
	cons, err := g.constraintOf()
	if err != nil {
		return nil, nil, err
	}
	if ts != nil {
		tc, err := ts.constraint()
		if err != nil {
			return nil, nil, err
		}
		if tc != nil && cons != nil {
			return nil, nil, invalid(cons.param, "%s cannot be combined with tool_choice %q: both constrain the output", cons.param, ts.choice)
		}
		if tc != nil {
			cons = tc
		}
	}
	eng, err := s.constrain(m, cons, base)
	if err != nil {
		return nil, nil, err
	}
	return ts, eng, nil
}
