package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"llmserve/model/chat"
)

// chatMessageIn is one input message; content is a string, null, or an
// array of text parts.
type chatMessageIn struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Name      string          `json:"name"`
	ToolCalls json.RawMessage `json:"tool_calls"`
}

// chatMessages checks the input messages and returns them in the
// template's form. Errors name the path of the fault: messages[2].content.
func chatMessages(in []chatMessageIn) ([]chat.Message, error) {
	if len(in) == 0 {
		return nil, invalid("messages", "messages must hold at least one message")
	}
	out := make([]chat.Message, len(in))
	for i, msg := range in {
		at := fmt.Sprintf("messages[%d]", i)
		role := msg.Role
		switch role {
		case "system", "user", "assistant":
		case "developer":
			role = "system"
		case "tool", "function":
			return nil, notYet(at+".role", fmt.Sprintf("tool calling is not served, so a %q message cannot be rendered", role))
		default:
			return nil, invalid(at+".role", "%s.role must be system, developer, user or assistant, not %q", at, role)
		}
		if hasEntries(msg.ToolCalls) {
			return nil, notYet(at+".tool_calls", "tool calling is not served")
		}
		text, err := messageText(at+".content", msg.Content)
		if err != nil {
			return nil, err
		}
		out[i] = chat.Message{Role: role, Content: text, Name: msg.Name}
	}
	return out, nil
}

// messageText reads a message content: a string, null, or an array of
// {"type":"text","text":...} parts. at is its path in errors.
func messageText(at string, raw json.RawMessage) (string, error) {
	if !present(raw) {
		return "", nil
	}
	if !jsonTextValid(raw) {
		return "", invalid(at, "%s is not valid UTF-8", at)
	}
	raw = bytes.TrimSpace(raw)
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", invalid(at, "%s must be a string or an array of text parts", at)
		}
		return s, nil
	case '[':
	default:
		return "", invalid(at, "%s must be a string or an array of text parts, not %s", at, jsonKindOf(raw))
	}
	var parts []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", invalid(at, "%s must be a string or an array of text parts", at)
	}
	var sb strings.Builder
	for j, p := range parts {
		part := fmt.Sprintf("%s[%d]", at, j)
		var typ string
		if json.Unmarshal(p["type"], &typ) != nil {
			return "", invalid(part+".type", "%s.type must be a string", part)
		}
		switch typ {
		case "text":
		case "image_url", "input_audio", "file", "image", "audio", "refusal":
			return "", notYet(part+".type", fmt.Sprintf("this server reads text only, not %q parts", typ))
		default:
			return "", invalid(part+".type", "%s.type must be \"text\", not %q", part, typ)
		}
		var text string
		if json.Unmarshal(p["text"], &text) != nil {
			return "", invalid(part+".text", "%s.text must be a string", part)
		}
		sb.WriteString(text)
	}
	return sb.String(), nil
}

// jsonKindOf names the kind of a raw JSON value for an error message.
func jsonKindOf(raw json.RawMessage) string {
	switch raw[0] {
	case '{':
		return "an object"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}

// contentBytes is a lower bound on the bytes the messages add to any
// rendering: their contents, less the whitespace a template may trim.
func contentBytes(msgs []chat.Message) int {
	n := 0
	for _, m := range msgs {
		n += len(strings.TrimSpace(m.Content))
	}
	return n
}
