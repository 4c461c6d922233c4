package toolcall

import "strings"

// Format is a family's tool-call syntax.
type Format int

const (
	// Hermes is <tool_call>{"name": ..., "arguments": {...}}</tool_call>,
	// one block per call (Qwen 2.5/3, Hermes 2 Pro and 3). It is also the
	// format of templates that show none of the known markers.
	Hermes Format = iota
	// Llama3 is {"name": ..., "parameters": {...}}, after <|python_tag|>
	// or bare (Llama 3.1, 3.2, 3.3); several calls are separated by ";".
	Llama3
	// Mistral is [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]
	// (Mistral Nemo, Mistral Small and Large of the v3 tokenizer).
	Mistral
)

// String names the format, for logs and /props.
func (f Format) String() string {
	switch f {
	case Llama3:
		return "llama3"
	case Mistral:
		return "mistral"
	}
	return "hermes"
}

// Detect chooses the format of a chat template from its source, by the
// markers it writes; known is false when none is there (the format is
// then Hermes).
func Detect(template string) (f Format, known bool) {
	switch {
	case strings.Contains(template, "[TOOL_CALLS]"):
		return Mistral, true
	case strings.Contains(template, "<tool_call>"):
		return Hermes, true
	case strings.Contains(template, "<|start_header_id|>") &&
		(strings.Contains(template, "<|python_tag|>") || strings.Contains(template, "ipython")):
		return Llama3, true
	}
	return Hermes, false
}

// argumentsKey is the key of a call's arguments in the format's JSON.
func (f Format) argumentsKey() string {
	if f == Llama3 {
		return "parameters"
	}
	return "arguments"
}
