package httpapi

import "encoding/json"

// notYet is the error for a field that would change the output in a way
// this server cannot honour yet: refused rather than silently ignored.
func notYet(param, what string) error {
	return invalid(param, "%s is not supported yet: %s", param, what)
}

// unsupported refuses the shared fields that would change the output but
// that this server does not implement, unless they hold their neutral value.
func (g *genParams) unsupported() error {
	if hasEntries(g.Functions) {
		return notYet("functions", `the legacy "functions" field is not served; send "tools"`)
	}
	return nil
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
