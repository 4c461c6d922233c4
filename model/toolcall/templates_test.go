package toolcall

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"llmserve/internal/shared"
	"llmserve/model/chat"
)

// toolTurns is a conversation with a tool call and its answer.
var toolTurns = []chat.Message{
	{Role: "system", Content: "You are terse."},
	{Role: "user", Content: "Weather in Paris?"},
	{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: "abc123def", Name: "get_weather", Arguments: `{"city":"Paris","days":3}`}}},
	{Role: "tool", Content: `{"temp": 21}`, ToolCallID: "abc123def", Name: "get_weather"},
	{Role: "assistant", Content: "21 C."},
	{Role: "user", Content: "And tomorrow?"},
}

const toolDefs = `[{"type":"function","function":{"name":"get_weather","description":"Weather of a city",` +
	`"parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]}}}]`

// TestSharedTemplates renders the model authors' templates with tools, an
// assistant's call and the tool's answer, and checks the format Detect
// picks, that the tools reach the prompt, that the call and the answer
// are written as the template's family writes them (what transformers
// renders), and that Parse reads the rendered call back.
func TestSharedTemplates(t *testing.T) {
	dir, err := shared.Dir()
	if err != nil {
		t.Skipf("shared folder: %v", err)
	}
	tests := []struct {
		file   string
		format Format
		want   []string // substrings of the rendering
		call   string   // the rendered call, which Parse must read back
	}{
		{"meta-llama-Llama-3.1-8B-Instruct.jinja", Llama3, []string{`"name": "get_weather"`, "Environment: ipython",
			"<|start_header_id|>ipython<|end_header_id|>\n\n\"{\\\"temp\\\": 21}\"<|eot_id|>"},
			`{"name": "get_weather", "parameters": {"city": "Paris", "days": 3}}`},
		{"meta-llama-Llama-3.2-3B-Instruct.jinja", Llama3, []string{`"name": "get_weather"`,
			"<|start_header_id|>ipython<|end_header_id|>\n\n\"{\\\"temp\\\": 21}\"<|eot_id|>"},
			`{"name": "get_weather", "parameters": {"city": "Paris", "days": 3}}`},
		{"meta-llama-Llama-3.3-70B-Instruct.jinja", Llama3, []string{`"name": "get_weather"`, "Environment: ipython",
			"<|start_header_id|>ipython<|end_header_id|>\n\n\"{\\\"temp\\\": 21}\"<|eot_id|>"},
			`{"name": "get_weather", "parameters": {"city": "Paris", "days": 3}}`},
		{"Qwen-Qwen2.5-7B-Instruct.jinja", Hermes, []string{"<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\"",
			"<|im_start|>user\n<tool_response>\n{\"temp\": 21}\n</tool_response><|im_end|>"},
			"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n</tool_call>"},
		{"NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", Hermes, []string{"<tools>", `"name": "get_weather"`, "<tool_response>"},
			"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n</tool_call>"},
		{"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja", Hermes, []string{"<tools>", `"name": "get_weather"`, "<tool_response>"},
			"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n</tool_call>"},
		{"mistralai-Mistral-Nemo-Instruct-2407.jinja", Mistral, []string{`[AVAILABLE_TOOLS][{"type": "function", "function": {"name": "get_weather"`,
			`[TOOL_RESULTS]{"content": {"temp": 21}, "call_id": "abc123def"}[/TOOL_RESULTS]`},
			`[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}, "id": "abc123def"}]`},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join(dir, "templates", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if f, known := Detect(string(src)); f != tt.format || !known {
				t.Errorf("Detect = %v (known %v), want %v", f, known, tt.format)
			}
			tmpl, err := chat.New(string(src))
			if err != nil {
				t.Fatal(err)
			}
			out, err := tmpl.Render(toolTurns, chat.Options{AddGenerationPrompt: true, BOSToken: "<|begin_of_text|>", EOSToken: "<|eot_id|>",
				Tools: json.RawMessage(toolDefs), Now: func() time.Time { return time.Date(2025, 7, 26, 0, 0, 0, 0, time.UTC) }})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range append(tt.want, tt.call, "Weather of a city") {
				if !strings.Contains(out, w) {
					t.Errorf("the rendering lacks %q:\n%s", w, out)
				}
			}
			_, calls := Parse(tt.format, tt.call)
			if len(calls) != 1 || calls[0].Name != "get_weather" || calls[0].Arguments != `{"city":"Paris","days":3}` {
				t.Errorf("Parse of the rendered call = %+v", calls)
			}
		})
	}
}
