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
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCalls  json.RawMessage `json:"tool_calls"`   // role "assistant": the calls it made
	ToolCallID string          `json:"tool_call_id"` // role "tool": the call it answers
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
		case "system", "user", "assistant", "tool":
		case "developer":
			role = "system"
		case "function":
			return nil, notYet(at+".role", `the legacy "function" role is not served; send "tool" messages`)
		default:
			return nil, invalid(at+".role", "%s.role must be system, developer, user, assistant or tool, not %q", at, role)
		}
		text, err := messageText(at+".content", msg.Content)
		if err != nil {
			return nil, err
		}
		out[i] = chat.Message{Role: role, Content: text, Name: msg.Name}
		if present(msg.ToolCalls) {
			if role != "assistant" {
				return nil, invalid(at+".tool_calls", "%s.tool_calls is only allowed in assistant messages", at)
			}
			if out[i].ToolCalls, err = toolCallsIn(at+".tool_calls", msg.ToolCalls); err != nil {
				return nil, err
			}
		}
		if role == "tool" {
			out[i].ToolCallID = msg.ToolCallID
		}
	}
	return out, nil
}

// toolCallIn is one call of an assistant message, as OpenAI sends it
// back: arguments are a JSON string holding an object (an object itself
// is taken too).
type toolCallIn struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// toolCallsIn reads the tool_calls of an assistant message at path at.
func toolCallsIn(at string, raw json.RawMessage) ([]chat.ToolCall, error) {
	var in []toolCallIn
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, invalid(at, `%s must be an array of {"id":...,"type":"function","function":{"name":...,"arguments":"{...}"}}`, at)
	}
	out := make([]chat.ToolCall, len(in))
	for j, c := range in {
		p := fmt.Sprintf("%s[%d]", at, j)
		if c.Type != "" && c.Type != "function" {
			return nil, invalid(p+".type", `%s.type must be "function", not %q`, p, c.Type)
		}
		if c.Function.Name == "" {
			return nil, invalid(p+".function.name", "%s.function.name is required", p)
		}
		args := bytes.TrimSpace(c.Function.Arguments)
		var s string
		if json.Unmarshal(args, &s) == nil {
			args = bytes.TrimSpace([]byte(s))
		}
		if len(args) == 0 || bytes.Equal(args, []byte("null")) {
			args = []byte("{}")
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(args, &obj) != nil {
			return nil, invalid(p+".function.arguments", "%s.function.arguments must be a JSON object (or a string holding one)", p)
		}
		out[j] = chat.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: string(args)}
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
