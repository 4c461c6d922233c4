package httpapi

import (
	"bytes"
	"encoding/json"
)

// notYet is the error for a field that would change the output in a way
// this server cannot honour yet: refused rather than silently ignored.
func notYet(param, what string) error {
	return invalid(param, "%s is not supported yet: %s", param, what)
}

// unsupported refuses the shared fields that would change the output but
// that this server does not implement, unless they hold their neutral value.
func (g *genParams) unsupported() error {
	switch {
	case present(g.Grammar) && !bytes.Equal(bytes.TrimSpace(g.Grammar), []byte(`""`)):
		return notYet("grammar", "output is not constrained by a grammar")
	case present(g.JSONSchema) && !isEmptyObject(g.JSONSchema):
		return notYet("json_schema", "output is not constrained by a schema")
	case present(g.ResponseFormat) && !isTextFormat(g.ResponseFormat):
		return notYet("response_format", `only {"type":"text"} is served`)
	case hasEntries(g.Functions):
		return notYet("functions", "function calling is not served")
	case hasEntries(g.Tools) && !isString(g.ToolChoice, "none"):
		return notYet("tools", `tool calling is not served; send tool_choice "none" or no tools`)
	}
	return nil
}

// isTextFormat reports whether raw is {"type":"text"}.
func isTextFormat(raw json.RawMessage) bool {
	var f struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(raw, &f) == nil && f.Type == "text"
}

// isEmptyObject reports whether raw is {}.
func isEmptyObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && len(m) == 0
}

// hasEntries reports whether raw is present and not an empty array.
func hasEntries(raw json.RawMessage) bool {
	if !present(raw) {
		return false
	}
	var list []json.RawMessage
	return json.Unmarshal(raw, &list) != nil || len(list) > 0
}

// isString reports whether raw is the JSON string s.
func isString(raw json.RawMessage, s string) bool {
	var got string
	return json.Unmarshal(raw, &got) == nil && got == s
}
