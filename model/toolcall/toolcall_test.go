package toolcall

import (
	"encoding/json"
	"reflect"
	"testing"

	"llmserve/grammar"
)

func TestDetect(t *testing.T) {
	tests := []struct {
		src   string
		want  Format
		known bool
	}{
		{`{{- "[TOOL_CALLS][" }}`, Mistral, true},
		{`<tool_call>\n{{ tool_call | tojson }}`, Hermes, true},
		{`<|start_header_id|>ipython<|end_header_id|>`, Llama3, true},
		{`<|start_header_id|>{{ "<|python_tag|>" }}`, Llama3, true},
		{`<|im_start|>{{ message.content }}`, Hermes, false},
	}
	for _, tt := range tests {
		got, known := Detect(tt.src)
		if got != tt.want || known != tt.known {
			t.Errorf("Detect(%q) = %v, %v; want %v, %v", tt.src, got, known, tt.want, tt.known)
		}
	}
}

func TestParse(t *testing.T) {
	weather := Call{Name: "get_weather", Arguments: `{"city":"Paris"}`}
	timeCall := Call{Name: "get_time", Arguments: `{"tz":"UTC"}`}
	tests := []struct {
		name    string
		f       Format
		text    string
		content string
		calls   []Call
	}{
		{"hermes single", Hermes, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>", "", []Call{weather}},
		{"hermes parallel", Hermes, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"UTC\"}}\n</tool_call>", "", []Call{weather, timeCall}},
		{"hermes leading text", Hermes, "Let me check.\n<tool_call>{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}</tool_call>", "Let me check.", []Call{weather}},
		{"hermes unclosed at end", Hermes, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}", "", []Call{weather}},
		{"hermes string arguments", Hermes, `<tool_call>{"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}</tool_call>`, "", []Call{weather}},
		{"hermes malformed", Hermes, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": </tool_call>", "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": </tool_call>", nil},
		{"hermes no name", Hermes, `<tool_call>{"arguments": {}}</tool_call>`, `<tool_call>{"arguments": {}}</tool_call>`, nil},
		{"hermes plain text", Hermes, "Hello there.", "Hello there.", nil},
		{"llama bare", Llama3, `{"name": "get_weather", "parameters": {"city": "Paris"}}`, "", []Call{weather}},
		{"llama python tag", Llama3, `<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}`, "", []Call{weather}},
		{"llama type function", Llama3, `{"type": "function", "name": "get_weather", "parameters": {"city": "Paris"}}`, "", []Call{weather}},
		{"llama parallel", Llama3, `{"name": "get_weather", "parameters": {"city": "Paris"}}; {"name": "get_time", "parameters": {"tz": "UTC"}}`, "", []Call{weather, timeCall}},
		{"llama leading text", Llama3, `Sure: {"name": "get_weather", "parameters": {"city": "Paris"}}`, "Sure:", []Call{weather}},
		{"llama json that is no call", Llama3, `{"city": "Paris"}`, `{"city": "Paris"}`, nil},
		{"llama trailing text", Llama3, `{"name": "get_weather", "parameters": {"city": "Paris"}} and more`, `{"name": "get_weather", "parameters": {"city": "Paris"}} and more`, nil},
		{"mistral tag", Mistral, `[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]`, "", []Call{weather}},
		{"mistral bare parallel", Mistral, `[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", "arguments": {"tz": "UTC"}}]`, "", []Call{weather, timeCall}},
		{"mistral leading text", Mistral, `I will look. [{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abc123def"}]`, "I will look.", []Call{{Name: "get_weather", Arguments: `{"city":"Paris"}`, ID: "abc123def"}}},
		{"mistral malformed", Mistral, `[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}`, `[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}`, nil},
		{"mistral array of numbers", Mistral, `[1, 2]`, `[1, 2]`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			content, calls := Parse(tt.f, tt.text)
			if content != tt.content || !reflect.DeepEqual(calls, tt.calls) {
				t.Errorf("Parse = %q, %+v; want %q, %+v", content, calls, tt.content, tt.calls)
			}
		})
	}
}

// byteVocab is a vocabulary of one token per byte and an end token (256).
func byteVocab(t *testing.T) *grammar.Vocab {
	t.Helper()
	v, err := grammar.NewVocab(257, func(id int32) []byte {
		if id == 256 {
			return nil
		}
		return []byte{byte(id)}
	}, []int32{256})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestGrammar checks that each format's grammar accepts the calls its
// parser reads back, and refuses wrong names, wrong arguments and text
// around the calls.
func TestGrammar(t *testing.T) {
	tools := []Tool{
		{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"],"additionalProperties":false}`)},
		{Name: "get_time", Parameters: json.RawMessage(`{"type":"object","properties":{"tz":{"enum":["UTC","CET"]}},"required":["tz"]}`)},
		{Name: "no_args"},
	}
	tests := []struct {
		f        Format
		parallel bool
		text     string
		ok       bool
	}{
		{Hermes, false, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Paris\"}}\n</tool_call>", true},
		{Hermes, false, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\":\"CET\"}}\n</tool_call>", true},
		{Hermes, false, "<tool_call>\n{\"name\": \"no_args\", \"arguments\": {}}\n</tool_call>", true},
		{Hermes, false, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\":\"PST\"}}\n</tool_call>", false},
		{Hermes, false, "<tool_call>\n{\"name\": \"other\", \"arguments\": {}}\n</tool_call>", false},
		{Hermes, false, "Sure <tool_call>\n{\"name\": \"no_args\", \"arguments\": {}}\n</tool_call>", false},
		{Hermes, false, "<tool_call>\n{\"name\": \"no_args\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"no_args\", \"arguments\": {}}\n</tool_call>", false},
		{Hermes, true, "<tool_call>\n{\"name\": \"no_args\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"x\",\"days\":3}}\n</tool_call>", true},
		{Llama3, false, `{"name": "get_weather", "parameters": {"city":"Paris"}}`, true},
		{Llama3, false, `{"name": "get_weather", "arguments": {"city":"Paris"}}`, false},
		{Llama3, true, `{"name": "get_weather", "parameters": {"city":"Paris"}}; {"name": "no_args", "parameters": {}}`, true},
		{Mistral, false, `[{"name": "get_weather", "arguments": {"city":"Paris"}}]`, true},
		{Mistral, false, `[{"name": "get_weather", "arguments": {"town":"Paris"}}]`, false},
		{Mistral, true, `[{"name": "get_weather", "arguments": {"city":"Paris"}}, {"name": "get_time", "arguments": {"tz":"UTC"}}]`, true},
	}
	v := byteVocab(t)
	for i, tt := range tests {
		src, err := Grammar(tt.f, tools, tt.parallel)
		if err != nil {
			t.Fatalf("%d: Grammar: %v", i, err)
		}
		g, err := grammar.Parse(src)
		if err != nil {
			t.Fatalf("%d: Parse: %v\n%s", i, err, src)
		}
		e, err := grammar.NewEngine(g, v)
		if err != nil {
			t.Fatal(err)
		}
		m, err := e.NewMatcher()
		if err != nil {
			t.Fatal(err)
		}
		ok := m.AcceptBytes([]byte(tt.text)) == nil && m.CanEnd()
		if ok != tt.ok {
			t.Errorf("%d: %v parallel=%v accepts %q: %v, want %v", i, tt.f, tt.parallel, tt.text, ok, tt.ok)
		}
		if ok {
			_, calls := Parse(tt.f, tt.text)
			if len(calls) == 0 {
				t.Errorf("%d: the grammar accepts %q, which Parse does not read as calls", i, tt.text)
			}
		}
	}
}

func TestGrammarErrors(t *testing.T) {
	_, err := Grammar(Hermes, []Tool{{Name: "a"}, {Name: "b", Parameters: json.RawMessage(`{"type":"object","patternProperties":{}}`)}}, false)
	var te *ToolError
	var se *grammar.SchemaError
	if !asErr(err, &te) || te.Index != 1 || !asErr(err, &se) || se.Keyword != "patternProperties" {
		t.Errorf("err = %v, want tool 1 keyword patternProperties", err)
	}
	if _, err := Grammar(Hermes, nil, false); err == nil {
		t.Error("no tools: no error")
	}
}

func TestRenameRules(t *testing.T) {
	src := "root ::= obj # a comment\nobj ::= \"{\\\"a-b\\\"\" [a-z\\]]{1,3} sub-rule\n"
	want := "p-root ::= p-obj # a comment\np-obj ::= \"{\\\"a-b\\\"\" [a-z\\]]{1,3} p-sub-rule\n"
	if got := renameRules(src, "p-"); got != want {
		t.Errorf("renameRules = %q, want %q", got, want)
	}
}

func TestSafePrefix(t *testing.T) {
	tests := []struct {
		f    Format
		text string
		want int
	}{
		{Hermes, "Hello", 5},
		{Hermes, "Hello <tool", 5},
		{Hermes, "Hello <tool_call>{", 5},
		{Hermes, "Hello\n", 5},
		{Hermes, "a < b", 5},
		{Hermes, "<", 0},
		{Llama3, "Sure, {\"name\"", 5},
		{Llama3, "plain <|pyth", 5},
		{Llama3, "plain", 5},
		{Mistral, "see [1]", 3},
		{Mistral, "[TOOL_C", 0},
		{Mistral, "ok", 2},
	}
	for _, tt := range tests {
		if got := SafePrefix(tt.f, tt.text); got != tt.want {
			t.Errorf("SafePrefix(%v, %q) = %d, want %d", tt.f, tt.text, got, tt.want)
		}
	}
}
