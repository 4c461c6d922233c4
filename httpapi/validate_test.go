package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestRequestBounds sends requests whose numbers, lists or fields are out
// of bounds or not served, and checks for a 400 that names the field the
// client sent. The fake model has a context of 256, a vocabulary of 38 and
// room for 4 requests (4 slots, no queue).
func TestRequestBounds(t *testing.T) {
	e := newEnv(t, envOptions{})
	many := func(n int, s string) string {
		list := make([]string, n)
		for i := range list {
			list[i] = s
		}
		b, _ := json.Marshal(list)
		return string(b)
	}
	pairs := func(n int) string {
		var sb strings.Builder
		sb.WriteString("[")
		for i := range n {
			if i > 0 {
				sb.WriteString(",")
			}
			fmt.Fprintf(&sb, "[%d,1]", i%38)
		}
		return sb.String() + "]"
	}
	const chatMsg = `"messages":[{"role":"user","content":"a"}]`
	tests := []struct {
		name, path, body string
		param            string
		msg              string // a substring of the message; "" for any
	}{
		{"repeat_last_n past int32", "/v1/completions", `{"prompt":"a","repeat_last_n":10000000000}`, "repeat_last_n", "256"},
		{"repeat_last_n 2^62", "/v1/completions", `{"prompt":"a","repeat_last_n":4611686018427387904}`, "repeat_last_n", ""},
		{"repeat_last_n past int64", "/v1/completions", `{"prompt":"a","repeat_last_n":1e30}`, "repeat_last_n", ""},
		{"repeat_last_n past context", "/v1/completions", `{"prompt":"a","repeat_last_n":257}`, "repeat_last_n", ""},
		{"repeat_last_n -2", "/v1/completions", `{"prompt":"a","repeat_last_n":-2}`, "repeat_last_n", ""},
		{"max_tokens past the bound", "/v1/completions", `{"prompt":"a","max_tokens":1073741825}`, "max_tokens", ""},
		{"max_tokens huge", "/v1/completions", `{"prompt":"a","max_tokens":99999999999999999999}`, "max_tokens", ""},
		{"max_completion_tokens named", "/v1/chat/completions", `{` + chatMsg + `,"max_completion_tokens":0,"max_tokens":5}`, "max_completion_tokens", ""},
		{"n_predict 0", "/v1/completions", `{"prompt":"a","n_predict":0}`, "n_predict", ""},
		{"n_predict -2", "/v1/completions", `{"prompt":"a","n_predict":-2}`, "n_predict", ""},
		{"top_k negative", "/v1/completions", `{"prompt":"a","top_k":-1}`, "top_k", ""},
		{"top_k past vocabulary", "/v1/completions", `{"prompt":"a","top_k":39}`, "top_k", ""},
		{"seed past int64", "/v1/completions", `{"prompt":"a","seed":18446744073709551616}`, "seed", ""},
		{"seed not an integer", "/v1/completions", `{"prompt":"a","seed":1.5}`, "seed", ""},
		{"n zero", "/v1/completions", `{"prompt":"a","n":0}`, "n", ""},
		{"n past capacity", "/v1/completions", `{"prompt":"a","n":5}`, "n", "4"},
		{"n huge", "/v1/chat/completions", `{` + chatMsg + `,"n":4611686018427387904}`, "n", ""},
		{"prompts times n past capacity", "/v1/completions", `{"prompt":["a","b","c"],"n":2}`, "n", "6"},
		{"prompts past capacity", "/v1/completions", `{"prompt":["a","b","c","d","e"]}`, "prompt", "5"},
		{"top_logprobs past 20", "/v1/chat/completions", `{` + chatMsg + `,"logprobs":true,"top_logprobs":21}`, "top_logprobs", ""},
		{"n_probs past 20", "/v1/completions", `{"prompt":"a","n_probs":21}`, "n_probs", ""},
		{"temperature past float32", "/v1/completions", `{"prompt":"a","temperature":1e39}`, "temperature", ""},
		{"top_p above 1", "/v1/completions", `{"prompt":"a","top_p":1.5}`, "top_p", ""},
		{"min_p negative", "/v1/completions", `{"prompt":"a","min_p":-0.1}`, "min_p", ""},
		{"presence_penalty", "/v1/completions", `{"prompt":"a","presence_penalty":3}`, "presence_penalty", ""},
		{"typical_p above 1", "/v1/completions", `{"prompt":"a","typical_p":2}`, "typical_p", ""},
		{"mirostat 3", "/v1/completions", `{"prompt":"a","mirostat":3}`, "mirostat", ""},
		{"mirostat_tau negative", "/v1/completions", `{"prompt":"a","mirostat_tau":-1}`, "mirostat_tau", ""},
		{"mirostat_eta above 1", "/v1/completions", `{"prompt":"a","mirostat_eta":2}`, "mirostat_eta", ""},
		{"dry_multiplier negative", "/v1/completions", `{"prompt":"a","dry_multiplier":-1}`, "dry_multiplier", ""},
		{"dry_base below 1", "/v1/completions", `{"prompt":"a","dry_base":0.5}`, "dry_base", ""},
		{"dry_allowed_length negative", "/v1/completions", `{"prompt":"a","dry_allowed_length":-1}`, "dry_allowed_length", ""},
		{"dry_penalty_last_n past context", "/v1/completions", `{"prompt":"a","dry_penalty_last_n":1000000}`, "dry_penalty_last_n", ""},
		{"dry_sequence_breakers too many", "/v1/completions", `{"prompt":"a","dry_sequence_breakers":` + many(33, "x") + `}`, "dry_sequence_breakers", "33"},
		{"dry_sequence_breakers not strings", "/v1/completions", `{"prompt":"a","dry_sequence_breakers":["a",1]}`, "dry_sequence_breakers[1]", ""},
		{"xtc_probability above 1", "/v1/completions", `{"prompt":"a","xtc_probability":1.5}`, "xtc_probability", ""},
		{"xtc_threshold negative", "/v1/completions", `{"prompt":"a","xtc_threshold":-0.1}`, "xtc_threshold", ""},
		{"top_n_sigma below -1", "/v1/completions", `{"prompt":"a","top_n_sigma":-2}`, "top_n_sigma", ""},
		{"samplers unknown letter", "/v1/completions", `{"prompt":"a","samplers":"kz"}`, "samplers", "z"},
		{"samplers unknown name", "/v1/completions", `{"prompt":"a","samplers":["top_k","bogus"]}`, "samplers[1]", "bogus"},
		{"samplers too many", "/v1/completions", `{"prompt":"a","samplers":` + many(17, "top_k") + `}`, "samplers", ""},
		{"samplers wrong type", "/v1/completions", `{"prompt":"a","samplers":5}`, "samplers", ""},
		{"stop too many", "/v1/completions", `{"prompt":"a","stop":` + many(17, "x") + `}`, "stop", "17"},
		{"stop too many bytes", "/v1/completions", `{"prompt":"a","stop":` + many(2, strings.Repeat("x", 2100)) + `}`, "stop", "4096"},
		{"stop one too long", "/v1/completions", `{"prompt":"a","stop":"` + strings.Repeat("x", 4097) + `"}`, "stop", ""},
		{"stop element not a string", "/v1/completions", `{"prompt":"a","stop":["x",2]}`, "stop[1]", ""},
		{"stop lone surrogate", "/v1/completions", `{"prompt":"a","stop":"\ud800"}`, "stop", "UTF-8"},
		{"logit_bias more entries than vocabulary", "/v1/completions", `{"prompt":"a","logit_bias":` + pairs(39) + `}`, "logit_bias", "39"},
		{"logit_bias negative id", "/v1/completions", `{"prompt":"a","logit_bias":{"-1":1}}`, "logit_bias", "-1"},
		{"logit_bias id past int32", "/v1/completions", `{"prompt":"a","logit_bias":{"99999999999":1}}`, "logit_bias", ""},
		{"logit_bias value too big", "/v1/completions", `{"prompt":"a","logit_bias":{"3":1e400}}`, "logit_bias", "finite"},
		{"logit_bias value past 100", "/v1/completions", `{"prompt":"a","logit_bias":{"3":101}}`, "logit_bias", "100"},
		{"logit_bias value true", "/v1/completions", `{"prompt":"a","logit_bias":{"3":true}}`, "logit_bias", ""},
		{"logit_bias list with text", "/v1/completions", `{"prompt":"a","logit_bias":[["hello",1]]}`, "logit_bias[0]", "not supported yet"},
		{"logit_bias list not pairs", "/v1/completions", `{"prompt":"a","logit_bias":[[3]]}`, "logit_bias[0]", ""},
		{"logit_bias a number", "/v1/completions", `{"prompt":"a","logit_bias":3}`, "logit_bias", ""},
		{"cache_prompt not boolean", "/v1/completions", `{"prompt":"a","cache_prompt":"yes"}`, "cache_prompt", ""},
		{"stream_options without stream", "/v1/completions", `{"prompt":"a","stream_options":{"include_usage":true}}`, "stream_options", ""},
		{"grammar syntax", "/v1/completions", `{"prompt":"a","grammar":"root ::= \"x"}`, "grammar", "line 1"},
		{"grammar undefined rule", "/v1/completions", `{"prompt":"a","grammar":"root ::= other"}`, "grammar", "other"},
		{"grammar not a string", "/v1/completions", `{"prompt":"a","grammar":["root"]}`, "grammar", ""},
		{"grammar the vocabulary cannot write", "/v1/completions", `{"prompt":"a","grammar":"root ::= \"{\""}`, "grammar", "vocabulary"},
		{"json_schema unsupported keyword", "/v1/completions", `{"prompt":"a","json_schema":{"type":"object","patternProperties":{}}}`, "json_schema", "patternProperties"},
		{"json_schema not an object", "/v1/completions", `{"prompt":"a","json_schema":[1]}`, "json_schema", ""},
		{"grammar and json_schema", "/v1/completions", `{"prompt":"a","grammar":"root ::= \"x\"","json_schema":{"type":"string"}}`, "json_schema", "only one"},
		{"grammar with ignore_eos", "/v1/completions", `{"prompt":"a","grammar":"root ::= \"x\"","ignore_eos":true}`, "ignore_eos", "grammar"},
		{"response_format unknown type", "/v1/chat/completions", `{` + chatMsg + `,"response_format":{"type":"yaml"}}`, "response_format.type", "yaml"},
		{"response_format no type", "/v1/chat/completions", `{` + chatMsg + `,"response_format":{}}`, "response_format.type", ""},
		{"response_format json_schema unsupported keyword", "/v1/chat/completions", `{` + chatMsg + `,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"string","pattern":"a+"}}}}`, "response_format.json_schema.schema", "pattern"},
		{"response_format json_schema without json_schema", "/v1/chat/completions", `{` + chatMsg + `,"response_format":{"type":"json_schema"}}`, "response_format.json_schema", ""},
		{"tools on completions", "/v1/completions", `{"prompt":"a","tools":[{"type":"function","function":{"name":"f"}}]}`, "tools", "chat"},
		{"tools without function", "/v1/chat/completions", `{` + chatMsg + `,"tools":[{"type":"function"}],"tool_choice":"auto"}`, "tools[0].function", ""},
		{"tools wrong type", "/v1/chat/completions", `{` + chatMsg + `,"tools":[{"type":"retrieval","function":{"name":"f"}}]}`, "tools[0].type", "retrieval"},
		{"tools bad name", "/v1/chat/completions", `{` + chatMsg + `,"tools":[{"type":"function","function":{"name":"a b"}}]}`, "tools[0].function.name", ""},
		{"tools duplicate name", "/v1/chat/completions", `{` + chatMsg + `,"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}]}`, "tools[1].function.name", "already"},
		{"tools not an array", "/v1/chat/completions", `{` + chatMsg + `,"tools":{"type":"function"}}`, "tools", ""},
		{"tool_choice unknown", "/v1/chat/completions", `{` + chatMsg + `,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"always"}`, "tool_choice", "always"},
		{"tool_choice names no tool", "/v1/chat/completions", `{` + chatMsg + `,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"g"}}}`, "tool_choice.function.name", "g"},
		{"tool_choice required without tools", "/v1/chat/completions", `{` + chatMsg + `,"tool_choice":"required"}`, "tool_choice", "needs tools"},
		{"tool_choice required unsupported keyword", "/v1/chat/completions", `{` + chatMsg + `,"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"g","parameters":{"type":"object","patternProperties":{}}}}],"tool_choice":"required"}`, "tools[1].function.parameters", "patternProperties"},
		{"tool_choice required with response_format", "/v1/chat/completions", `{` + chatMsg + `,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required","response_format":{"type":"json_object"}}`, "response_format", "tool_choice"},
		{"functions", "/v1/chat/completions", `{` + chatMsg + `,"functions":[{"name":"f"}]}`, "functions", "not supported yet"},
		{"echo", "/v1/completions", `{"prompt":"a","echo":true}`, "echo", "not supported yet"},
		{"suffix", "/v1/completions", `{"prompt":"a","suffix":"b"}`, "suffix", "not supported yet"},
		{"best_of", "/v1/completions", `{"prompt":"a","best_of":2}`, "best_of", "not supported yet"},
		{"prompt element of another type", "/v1/completions", `{"prompt":["a",5]}`, "prompt[1]", ""},
		{"prompt token id not an integer", "/v1/completions", `{"prompt":[["a"]]}`, "prompt[0][0]", ""},
		{"prompt token id past int32", "/v1/completions", `{"prompt":[1,4294967296]}`, "prompt[1]", ""},
		{"prompt token id outside vocabulary", "/v1/completions", `{"prompt":["a",[1,2,99]]}`, "prompt[1][2]", "99"},
		{"prompt empty id list", "/v1/completions", `{"prompt":["a",[]]}`, "prompt[1]", "empty"},
		{"prompt lone surrogate", "/v1/completions", `{"prompt":["a","\udc00"]}`, "prompt[1]", "UTF-8"},
		{"prompt invalid UTF-8", "/v1/completions", "{\"prompt\":\"a\xff\"}", "prompt", "UTF-8"},
		{"prompt element too long", "/v1/completions", `{"prompt":["a","` + strings.Repeat("b", 300) + `"]}`, "prompt[1]", ""},
		{"role function", "/v1/chat/completions", `{"messages":[{"role":"user","content":"a"},{"role":"function","content":"x"}]}`, "messages[1].role", "not supported yet"},
		{"role unknown", "/v1/chat/completions", `{"messages":[{"role":"robot","content":"a"}]}`, "messages[0].role", "robot"},
		{"content a number", "/v1/chat/completions", `{"messages":[{"role":"user","content":5}]}`, "messages[0].content", "number"},
		{"content an object", "/v1/chat/completions", `{"messages":[{"role":"user","content":{"text":"a"}}]}`, "messages[0].content", "object"},
		{"content part text not a string", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"text","text":5}]}]}`, "messages[0].content[0].text", ""},
		{"content part unknown type", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"video"}]}]}`, "messages[0].content[1].type", "video"},
		{"content part without type", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"text":"a"}]}]}`, "messages[0].content[0].type", ""},
		{"content invalid UTF-8", "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"user\",\"content\":\"\xc3\"}]}", "messages[1].content", "UTF-8"},
		{"content lone surrogate in a part", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"text","text":"\ud83d x"}]}]}`, "messages[0].content", "UTF-8"},
		{"tool_calls without name", "/v1/chat/completions", `{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"1"}]}]}`, "messages[0].tool_calls[0].function.name", ""},
		{"tool_calls arguments not an object", "/v1/chat/completions", `{"messages":[{"role":"assistant","tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":"[1]"}}]}]}`, "messages[0].tool_calls[0].function.arguments", "object"},
		{"tool_calls not an array", "/v1/chat/completions", `{"messages":[{"role":"assistant","tool_calls":{"id":"1"}}]}`, "messages[0].tool_calls", ""},
		{"tool_calls on a user message", "/v1/chat/completions", `{"messages":[{"role":"user","content":"a","tool_calls":[{"id":"1","function":{"name":"f"}}]}]}`, "messages[0].tool_calls", "assistant"},
		{"chat longer than context", "/v1/chat/completions", `{"messages":[{"role":"user","content":"` + strings.Repeat("a", 300) + `"}]}`, "messages", "256"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := e.do(t, "POST", tt.path, tt.body)
			if code != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %s", code, body)
			}
			got := errorOf(t, body)
			if got.Param != tt.param || got.Type != "invalid_request_error" {
				t.Errorf("param %v type %q, want %q: %s", got.Param, got.Type, tt.param, got.Message)
			}
			if !strings.Contains(got.Message, tt.msg) {
				t.Errorf("message %q lacks %q", got.Message, tt.msg)
			}
		})
	}
	if n := e.sched.Pending(); n != 0 {
		t.Errorf("%d requests left in the scheduler", n)
	}
}

// TestRequestAccepted checks that llama.cpp's forms and the fields that do
// not change the output are accepted.
func TestRequestAccepted(t *testing.T) {
	e := newEnv(t, envOptions{})
	const chatMsg = `"messages":[{"role":"developer","content":"be brief"},{"role":"user","content":[{"type":"text","text":"a"}]}]`
	tests := []struct{ name, path, body string }{
		{"repeat_last_n -1", "/v1/completions", `{"prompt":"a","repeat_last_n":-1,"repeat_penalty":1.1}`},
		{"repeat_last_n context", "/v1/completions", `{"prompt":"a","repeat_last_n":256,"repeat_penalty":1.1}`},
		{"n_predict -1", "/v1/completions", `{"prompt":"a","n_predict":-1}`},
		{"max_tokens context", "/v1/completions", `{"prompt":"a","max_tokens":256}`},
		{"max_tokens past context", "/v1/completions", `{"prompt":"a","max_tokens":100000}`},
		{"seed -1", "/v1/completions", `{"prompt":"a","seed":-1,"max_tokens":2}`},
		{"logit_bias ban", "/v1/completions", `{"prompt":"a","logit_bias":{"3":false,"4":-100},"max_tokens":2}`},
		{"logit_bias list", "/v1/completions", `{"prompt":"a","logit_bias":[[3,-5.5],[4,false]],"max_tokens":2}`},
		{"logit_bias empty", "/v1/completions", `{"prompt":"a","logit_bias":{},"max_tokens":2}`},
		{"stop list with empty string", "/v1/completions", `{"prompt":"a","stop":["","zz"],"max_tokens":2}`},
		{"dry_sequence_breakers", "/v1/completions", `{"prompt":"a","dry_sequence_breakers":["\n","x"],"max_tokens":2}`},
		{"n_probs", "/v1/completions", `{"prompt":"a","n_probs":2,"max_tokens":2}`},
		{"neutral extras", "/v1/completions", `{"prompt":"a","max_tokens":2,"cache_prompt":true,"id_slot":-1,"t_max_predict_ms":100,"user":"u","grammar":"","json_schema":{},"typical_p":1,"mirostat":0,"top_n_sigma":-1,"dry_multiplier":0,"xtc_probability":0,"echo":false,"suffix":"","best_of":1}`},
		{"chat neutral extras", "/v1/chat/completions", `{` + chatMsg + `,"max_tokens":2,"store":false,"metadata":{"a":"b"},"parallel_tool_calls":false,"response_format":{"type":"text"},"tools":[{"type":"function"}],"tool_choice":"none"}`},
		{"chat empty tools", "/v1/chat/completions", `{` + chatMsg + `,"max_tokens":2,"tools":[]}`},
		{"stream_options with stream", "/v1/chat/completions", `{` + chatMsg + `,"max_tokens":2,"stream":true,"stream_options":{"include_usage":true}}`},
		{"surrogate pair", "/v1/chat/completions", `{"messages":[{"role":"user","content":"\ud83d\ude00 \\ud800"}],"max_tokens":2}`},
		{"prompts mixed", "/v1/completions", `{"prompt":["a",[1,3,4]],"max_tokens":2,"n":2}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if code, body := e.do(t, "POST", tt.path, tt.body); code != http.StatusOK {
				t.Errorf("status %d: %s", code, body)
			}
		})
	}
}
