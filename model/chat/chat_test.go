package chat

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func render(t *testing.T, src string, msgs []Message, opts Options) string {
	t.Helper()
	tmpl, err := New(src)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tmpl.Render(msgs, opts)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestRenderVariables(t *testing.T) {
	user := []Message{{Role: "user", Content: "hi"}}
	tests := []struct {
		name, src string
		msgs      []Message
		opts      Options
		want      string
	}{
		{"optional variables undefined", "{{ tools is defined }} {{ enable_thinking is defined }} {{ messages[0].tool_calls is defined }}",
			user, Options{}, "False False False"},
		{"add_generation_prompt", "{{ add_generation_prompt }}", nil, Options{AddGenerationPrompt: true}, "True"},
		{"special tokens", "{{ bos_token }}|{{ eos_token }}", nil, Options{BOSToken: "<s>", EOSToken: "</s>"}, "<s>|</s>"},
		{"vars", "{{ enable_thinking is false }} {{ n + 1 }} {{ obj | tojson }}", nil,
			Options{Vars: map[string]any{"enable_thinking": false, "n": 41, "obj": json.RawMessage(`{"b":1,"a":2}`)}},
			`True 42 {"b": 1, "a": 2}`},
		{"named options win over vars", "{{ bos_token }}", nil,
			Options{BOSToken: "<s>", Vars: map[string]any{"bos_token": "x"}}, "<s>"},
		{"message fields", "{% for m in messages %}{{ m.role }}:{{ m.content }}:{{ m.name }}:{{ m.tool_call_id }}:{{ m.reasoning_content }};{% endfor %}",
			[]Message{{Role: "tool", Content: "42", Name: "calc", ToolCallID: "c1"}, {Role: "assistant", Content: "a", ReasoningContent: "r"}},
			Options{}, "tool:42:calc:c1:;assistant:a:::r;"},
		{"message text stays literal", "{{ messages[0].content }}",
			[]Message{{Role: "user", Content: "{{ 7 * 7 }} {% raw %}{# c #}"}}, Options{}, "{{ 7 * 7 }} {% raw %}{# c #}"},
		// Python's json.dumps: ", " and ": " separators, no ASCII or HTML escaping, key order kept.
		{"tools tojson", "{% for tool in tools %}{{ tool | tojson }}\n{% endfor %}", nil,
			Options{Tools: json.RawMessage(`[{"type":"function","function":{"name":"get","parameters":{"z":1,"a":[1.5,"<é&>",null,true]}}}]`)},
			`{"type": "function", "function": {"name": "get", "parameters": {"z": 1, "a": [1.5, "<é&>", null, true]}}}` + "\n"},
		{"tool calls", "{% for c in messages[0].tool_calls %}{{ c.id }} {{ c.type }} {{ c.function.name }} {{ c.function.arguments | tojson }} {{ c.function.arguments is string }};{% endfor %}",
			[]Message{{Role: "assistant", ToolCalls: []ToolCall{{ID: "c1", Name: "get", Arguments: `{"city":"Paris","days":3}`}, {Name: "now"}}}},
			Options{}, `c1 function get {"city": "Paris", "days": 3} False; function now {} False;`},
		{"strftime_now", "{{ strftime_now('%d %b %Y') }}", nil,
			Options{Now: func() time.Time { return time.Date(2024, 7, 26, 13, 5, 0, 0, time.UTC) }}, "26 Jul 2024"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := render(t, tc.src, tc.msgs, tc.opts); got != tc.want {
				t.Errorf("\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	for _, src := range []string{
		"",
		"  \n",
		"{% for m in messages %}{{ m.content }}",
		"{{ messages[0].content ",
		"{{ 1 + }}",
		"{% if true %}x",
		"{% foo %}",
		"{% endfor %}",
	} {
		if _, err := New(src); err == nil || !strings.HasPrefix(err.Error(), "chat: ") {
			t.Errorf("New(%q) error = %v, want a chat: error", src, err)
		}
	}
}

func TestRenderErrors(t *testing.T) {
	tests := []struct {
		name, src string
		msgs      []Message
		opts      Options
		want      string // in the error
	}{
		{"raise_exception", "{% if messages[0].role != 'system' %}{{ raise_exception('system message required') }}{% endif %}",
			[]Message{{Role: "user"}}, Options{}, "system message required"},
		{"bad tools json", "{{ tools }}", nil, Options{Tools: json.RawMessage(`[{"a":}]`)}, "tools"},
		{"tools with trailing data", "{{ tools }}", nil, Options{Tools: json.RawMessage(`[] []`)}, "tools"},
		{"bad tool arguments", "", []Message{{Role: "assistant", ToolCalls: []ToolCall{{Name: "f", Arguments: "{oops"}}}}, Options{}, `message 0: tool call 0: arguments of "f"`},
		{"unsupported var", "", nil, Options{Vars: map[string]any{"v": struct{}{}}}, `variable "v"`},
		{"strftime_now without format", "{{ strftime_now() }}", nil, Options{}, "strftime_now"},
		{"engine panic", "{{ 'a' * -1 }}", nil, Options{}, "template engine failed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := tc.src
			if src == "" {
				src = "x"
			}
			tmpl, err := New(src)
			if err != nil {
				t.Fatal(err)
			}
			_, err = tmpl.Render(tc.msgs, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestStrftime(t *testing.T) {
	at := time.Date(2025, 3, 4, 9, 7, 5, 0, time.UTC)
	tests := []struct{ format, want string }{
		{"%d %b %Y", "04 Mar 2025"},
		{"%-d %B %Y", "4 March 2025"},
		{"%Y-%m-%d %H:%M:%S", "2025-03-04 09:07:05"},
		{"%a %A %y %j", "Tue Tuesday 25 063"},
		{"%I%p %Z", "09AM UTC"},
		{"100%% at %Q and %", "100% at %Q and %"},
		{"Today 2006", "Today 2006"},
	}
	for _, tc := range tests {
		if got := strftime(at, tc.format); got != tc.want {
			t.Errorf("strftime(%q) = %q, want %q", tc.format, got, tc.want)
		}
	}
}
