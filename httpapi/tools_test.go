package httpapi

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"llmserve/internal/shared"
)

// hermesTemplate is a small ChatML template with Hermes-style tool calls.
const hermesTemplate = `{%- if tools %}<|im_start|>system
<tools>
{%- for tool in tools %}
{{ tool | tojson }}
{%- endfor %}
</tools>
Answer with <tool_call>{"name": ..., "arguments": ...}</tool_call> to call a tool.<|im_end|>
{% endif %}
{%- for m in messages %}<|im_start|>{{ m.role }}
{%- if m.tool_calls %}{% for c in m.tool_calls %}
<tool_call>
{{ c.function | tojson }}
</tool_call>{% endfor %}{% else %}
{{ m.content }}{% endif %}<|im_end|>
{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant
{% endif %}`

const weatherTools = `[{"type":"function","function":{"name":"get_weather","description":"Weather of a city",
"parameters":{"type":"object","properties":{"city":{"type":"string","maxLength":8},"unit":{"enum":["c","f"]}},"required":["city","unit"],"additionalProperties":false}}},
{"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{"tz":{"enum":["UTC","CET"]}},"required":["tz"]}}}]`

// checkCall validates one call against weatherTools.
func checkCall(t *testing.T, name, args string) {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(args), &v); err != nil {
		t.Errorf("%s: arguments %q are not an object: %v", name, args, err)
		return
	}
	switch name {
	case "get_weather":
		city, ok := v["city"].(string)
		if !ok || len([]rune(city)) > 8 || (v["unit"] != "c" && v["unit"] != "f") || len(v) != 2 {
			t.Errorf("get_weather arguments %s do not validate", args)
		}
	case "get_time":
		if v["tz"] != "UTC" && v["tz"] != "CET" {
			t.Errorf("get_time arguments %s do not validate", args)
		}
	default:
		t.Errorf("call of unknown function %q", name)
	}
}

// streamedCall is a call put together from delta.tool_calls chunks.
type streamedCall struct{ id, name, args string }

// streamCalls reads a streamed chat answer: its content, calls and finish
// reason, checking that each call's first piece has its id and name.
func streamCalls(t *testing.T, body []byte) (string, []streamedCall, string) {
	t.Helper()
	events := sseEvents(t, body)
	if len(events) == 0 || events[len(events)-1] != "[DONE]" {
		t.Fatalf("stream does not end with [DONE]")
	}
	var (
		content, finish string
		calls           []streamedCall
	)
	for _, ev := range events[:len(events)-1] {
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						Index    *int   `json:"index"`
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(ev), &chunk); err != nil {
			t.Fatalf("chunk %q: %v", ev, err)
		}
		for _, c := range chunk.Choices {
			content += c.Delta.Content
			for _, tc := range c.Delta.ToolCalls {
				switch {
				case tc.Index == nil:
					t.Fatalf("tool call piece without index: %s", ev)
				case *tc.Index == len(calls):
					if tc.ID == "" || tc.Function.Name == "" {
						t.Fatalf("first piece of call %d lacks id or name: %s", *tc.Index, ev)
					}
					calls = append(calls, streamedCall{id: tc.ID, name: tc.Function.Name, args: tc.Function.Arguments})
				case *tc.Index == len(calls)-1:
					calls[*tc.Index].args += tc.Function.Arguments
				default:
					t.Fatalf("tool call piece of index %d after %d calls", *tc.Index, len(calls))
				}
			}
			if c.FinishReason != nil {
				finish = *c.FinishReason
			}
		}
	}
	return content, calls, finish
}

// TestToolChoiceForced checks tool_choice "required" and a named function
// on a random model: every answer is valid calls, finish_reason
// tool_calls, whole and streamed, in the template's format.
func TestToolChoiceForced(t *testing.T) {
	templates := map[string]string{"hermes": hermesTemplate}
	for name, file := range map[string]string{
		"llama3.1": "meta-llama-Llama-3.1-8B-Instruct.jinja",
		"llama3.2": "meta-llama-Llama-3.2-3B-Instruct.jinja",
		"qwen2.5":  "Qwen-Qwen2.5-7B-Instruct.jinja",
		"mistral":  "mistralai-Mistral-Nemo-Instruct-2407.jinja",
	} {
		dir, err := shared.Dir()
		if err != nil {
			t.Logf("%s: %v: not tested", name, err)
			continue
		}
		src, err := os.ReadFile(filepath.Join(dir, "templates", file))
		if err != nil {
			t.Logf("%s: %v: not tested", name, err)
			continue
		}
		templates[name] = string(src)
	}
	for tmplName, src := range templates {
		e := byteEnv(t, src)
		tests := []struct {
			name, choice string
			parallel     bool
			want         string // the one function allowed, or ""
		}{
			{"required", `"required"`, true, ""},
			{"required single", `"required"`, false, ""},
			{"named", `{"type":"function","function":{"name":"get_time"}}`, true, "get_time"},
		}
		for _, tt := range tests {
			for seed := range 3 {
				t.Run(fmt.Sprintf("%s/%s/%d", tmplName, tt.name, seed), func(t *testing.T) {
					// The random model would rather start another call than
					// end (EOS has a low logit): the bias lets it end where
					// the grammar allows.
					body := fmt.Sprintf(`{"messages":[{"role":"user","content":"Weather in Paris?"}],"tools":%s,"tool_choice":%s,"parallel_tool_calls":%v,"seed":%d,"max_tokens":600,"logit_bias":{"0":12}`,
						weatherTools, tt.choice, tt.parallel, seed)
					var out chatOut
					e.post(t, "/v1/chat/completions", body+"}", &out)
					c := out.Choices[0]
					if c.FinishReason != "tool_calls" || len(c.Message.ToolCalls) == 0 {
						t.Fatalf("finish %q, %d calls, content %q", c.FinishReason, len(c.Message.ToolCalls), deref(c.Message.Content))
					}
					if c.Message.Content != nil {
						t.Errorf("content %q beside the calls, want null", *c.Message.Content)
					}
					if !tt.parallel && len(c.Message.ToolCalls) != 1 {
						t.Errorf("%d calls without parallel_tool_calls", len(c.Message.ToolCalls))
					}
					for _, call := range c.Message.ToolCalls {
						if call.Type != "function" || (tmplName != "mistral" && !strings.HasPrefix(call.ID, "call_")) || (tmplName == "mistral" && len(call.ID) != 9) {
							t.Errorf("call id %q type %q", call.ID, call.Type)
						}
						if tt.want != "" && call.Function.Name != tt.want {
							t.Errorf("call of %q, want %q", call.Function.Name, tt.want)
						}
						checkCall(t, call.Function.Name, call.Function.Arguments)
					}
					code, raw := e.do(t, "POST", "/v1/chat/completions", body+`,"stream":true}`)
					if code != 200 {
						t.Fatalf("stream: %d %s", code, raw)
					}
					content, calls, finish := streamCalls(t, raw)
					if finish != "tool_calls" || content != "" || len(calls) != len(c.Message.ToolCalls) {
						t.Fatalf("stream: finish %q content %q %d calls, want tool_calls and the %d calls", finish, content, len(calls), len(c.Message.ToolCalls))
					}
					for i, call := range calls {
						if call.name != c.Message.ToolCalls[i].Function.Name || call.args != c.Message.ToolCalls[i].Function.Arguments {
							t.Errorf("streamed call %d %s(%s), whole %s(%s)", i, call.name, call.args, c.Message.ToolCalls[i].Function.Name, c.Message.ToolCalls[i].Function.Arguments)
						}
					}
				})
			}
		}
	}
}

// TestToolRoundTrip sends a conversation with an assistant's calls
// (content null) and the tool's answers back, with tools on "auto": the
// model's free text comes back as content.
func TestToolRoundTrip(t *testing.T) {
	e := byteEnv(t, hermesTemplate)
	body := `{"messages":[{"role":"user","content":"Weather in Paris?"},
{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\",\"unit\":\"c\"}"}}]},
{"role":"tool","tool_call_id":"call_1","name":"get_weather","content":"21 C"}],
"tools":` + weatherTools + `,"max_tokens":20,"seed":1}`
	var out chatOut
	e.post(t, "/v1/chat/completions", body, &out)
	c := out.Choices[0]
	if c.Message.Content == nil || len(c.Message.ToolCalls) != 0 || c.FinishReason == "tool_calls" {
		t.Errorf("auto on random text: content %v, %d calls, finish %q", c.Message.Content, len(c.Message.ToolCalls), c.FinishReason)
	}
	code, raw := e.do(t, "POST", "/v1/chat/completions", strings.TrimSuffix(body, "}")+`,"stream":true}`)
	if code != 200 {
		t.Fatalf("stream: %d %s", code, raw)
	}
	content, calls, finish := streamCalls(t, raw)
	if content != *c.Message.Content || len(calls) != 0 || finish != c.FinishReason {
		t.Errorf("stream %q %d calls %q; whole %q %q", content, len(calls), finish, *c.Message.Content, c.FinishReason)
	}
}

// TestToolAutoParses checks that with tool_choice "auto" a call the model
// writes after some text is read out of it (the text stays content), whole
// and streamed; a grammar makes the fake model write it.
func TestToolAutoParses(t *testing.T) {
	e := byteEnv(t, hermesTemplate)
	answer := "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"c\"}}\n</tool_call>"
	g, _ := json.Marshal("root ::= " + strings.ReplaceAll(fmt.Sprintf("%q", answer), `\u003c`, "<"))
	tests := []struct {
		name, extra string
		calls       int
	}{
		{"one call", "", 1},
		{"text only", `,"tool_choice":"none"`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"messages":[{"role":"user","content":"Weather?"}],"tools":` + weatherTools + `,"max_tokens":200,"grammar":` + string(g) + tt.extra
			var out chatOut
			e.post(t, "/v1/chat/completions", body+"}", &out)
			c := out.Choices[0]
			wantContent, wantFinish := "Let me look.", "tool_calls"
			if tt.calls == 0 {
				wantContent, wantFinish = answer, "stop"
			}
			if c.Message.Content == nil || *c.Message.Content != wantContent || len(c.Message.ToolCalls) != tt.calls || c.FinishReason != wantFinish {
				t.Fatalf("content %v, %d calls, finish %q", c.Message.Content, len(c.Message.ToolCalls), c.FinishReason)
			}
			if tt.calls == 1 && (c.Message.ToolCalls[0].Function.Name != "get_weather" || c.Message.ToolCalls[0].Function.Arguments != `{"city":"Paris","unit":"c"}`) {
				t.Errorf("call %+v", c.Message.ToolCalls[0])
			}
			code, raw := e.do(t, "POST", "/v1/chat/completions", body+`,"stream":true}`)
			if code != 200 {
				t.Fatalf("stream: %d %s", code, raw)
			}
			content, calls, finish := streamCalls(t, raw)
			if content != wantContent || len(calls) != tt.calls || finish != wantFinish {
				t.Errorf("stream: content %q, %d calls, finish %q", content, len(calls), finish)
			}
		})
	}
}

// TestToolStreamLogprobs checks that a streamed answer with tools still
// carries one logprobs entry per generated token.
func TestToolStreamLogprobs(t *testing.T) {
	e := byteEnv(t, hermesTemplate)
	code, raw := e.do(t, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"Weather?"}],"tools":`+weatherTools+
		`,"max_tokens":12,"logprobs":true,"stream":true,"stream_options":{"include_usage":true}}`)
	if code != 200 {
		t.Fatalf("%d %s", code, raw)
	}
	entries, completion := 0, 0
	for _, ev := range sseEvents(t, raw) {
		var chunk struct {
			Choices []struct {
				Logprobs *struct {
					Content []json.RawMessage `json:"content"`
				} `json:"logprobs"`
			} `json:"choices"`
			Usage *usageJSON `json:"usage"`
		}
		if ev == "[DONE]" || json.Unmarshal([]byte(ev), &chunk) != nil {
			continue
		}
		for _, c := range chunk.Choices {
			if c.Logprobs != nil {
				entries += len(c.Logprobs.Content)
			}
		}
		if chunk.Usage != nil {
			completion = chunk.Usage.CompletionTokens
		}
	}
	if entries == 0 || entries < completion-1 || entries > completion {
		t.Errorf("%d logprobs entries for %d completion tokens", entries, completion)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
