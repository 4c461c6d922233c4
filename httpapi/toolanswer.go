package httpapi

import (
	"crypto/rand"
	"strings"

	"llmserve/model/toolcall"
)

// answer splits a choice's text into its content and its calls, the
// finish reason "tool_calls" when there are calls and generation stopped
// by itself. Content is nil when the text is all calls; without parallel
// calls only the first is kept.
func (ts *toolSet) answer(text, finish string) (*string, []toolCallJSON, string) {
	content, calls := toolcall.Parse(ts.format, text)
	if len(calls) == 0 {
		return strptr(text), nil, finish
	}
	if !ts.parallel {
		calls = calls[:1]
	}
	out := make([]toolCallJSON, len(calls))
	for i, c := range calls {
		out[i] = toolCallJSON{ID: ts.callID(), Type: "function", Function: toolFunctionJSON{Name: c.Name, Arguments: c.Arguments}}
	}
	if finish == "stop" {
		finish = "tool_calls"
	}
	if content == "" {
		return nil, out, finish
	}
	return strptr(content), out, finish
}

// callID makes the id of a call: "call_" and 24 random letters and
// digits, or 9 of them for Mistral's templates, which refuse other ids
// when the call comes back in the conversation.
func (ts *toolSet) callID() string {
	if ts.format == toolcall.Mistral {
		return randomAlnum(9)
	}
	return "call_" + randomAlnum(24)
}

// randomAlnum returns n random letters and digits.
func randomAlnum(n int) string {
	const chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read does not fail
	var sb strings.Builder
	for _, c := range b {
		sb.WriteByte(chars[int(c)%len(chars)])
	}
	return sb.String()
}
