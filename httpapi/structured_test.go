package httpapi

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// chatOut is a non-streamed chat answer, as a client reads it.
type chatOut struct {
	Choices []struct {
		Message struct {
			Content   *string `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

// TestGrammarConstrains checks that GBNF output belongs to the grammar
// and ends with it (finish_reason stop), for every choice and seed, in
// whole responses and streams, on both endpoints.
func TestGrammarConstrains(t *testing.T) {
	e := byteEnv(t, plainTemplate)
	grammar := `root ::= ("yes" | "no") ", " [0-9]{1,3} " " [a-z]{2,5} "."`
	re := regexp.MustCompile(`^(yes|no), [0-9]{1,3} [a-z]{2,5}\.$`)
	g, _ := json.Marshal(grammar)
	for seed := range 4 {
		var resp struct {
			Choices []struct {
				Text         string `json:"text"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
		}
		e.post(t, "/v1/completions", fmt.Sprintf(`{"prompt":"q","n":3,"seed":%d,"max_tokens":64,"grammar":%s}`, seed, g), &resp)
		if len(resp.Choices) != 3 {
			t.Fatalf("%d choices, want 3", len(resp.Choices))
		}
		for _, c := range resp.Choices {
			if !re.MatchString(c.Text) || c.FinishReason != "stop" {
				t.Errorf("seed %d: %q finish %q, want a match of the grammar and stop", seed, c.Text, c.FinishReason)
			}
		}
		for _, path := range []string{"/v1/completions", "/v1/chat/completions"} {
			body := fmt.Sprintf(`{"prompt":"q","messages":[{"role":"user","content":"q"}],"stream":true,"seed":%d,"max_tokens":64,"grammar":%s}`, seed, g)
			code, out := e.do(t, "POST", path, body)
			if code != 200 {
				t.Fatalf("%s: %d %s", path, code, out)
			}
			text, finish, _ := streamText(t, sseEvents(t, out))
			if !re.MatchString(text) || finish != "stop" {
				t.Errorf("%s seed %d stream: %q finish %q", path, seed, text, finish)
			}
		}
	}
	if n := e.api.grammar.len(); n != 1 {
		t.Errorf("%d grammars cached after one grammar sent 12 times, want 1", n)
	}
}

// personSchema has a property of each kind the checks below validate.
const personSchema = `{"type":"object","properties":{"name":{"type":"string","maxLength":6},"age":{"type":"integer"},
"ok":{"type":"boolean"},"color":{"enum":["red","green"]},"tags":{"type":"array","items":{"type":"string","maxLength":3},"maxItems":2}},
"required":["name","age","ok","color"],"additionalProperties":false}`

// checkPerson validates text against personSchema.
func checkPerson(t *testing.T, text string) {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		t.Errorf("%q is not a JSON object: %v", text, err)
		return
	}
	for k, val := range v {
		ok := false
		switch k {
		case "name":
			s, isStr := val.(string)
			ok = isStr && len([]rune(s)) <= 6
		case "age":
			f, isNum := val.(float64)
			ok = isNum && f == float64(int64(f))
		case "ok":
			_, ok = val.(bool)
		case "color":
			ok = val == "red" || val == "green"
		case "tags":
			list, isList := val.([]any)
			ok = isList && len(list) <= 2
		}
		if !ok {
			t.Errorf("%q: property %q = %v does not validate", text, k, val)
		}
	}
	for _, k := range []string{"name", "age", "ok", "color"} {
		if _, ok := v[k]; !ok {
			t.Errorf("%q lacks required %q", text, k)
		}
	}
}

// TestResponseFormat checks that json_schema output (OpenAI's and
// llama-server's forms) parses and validates, and json_object is an object.
func TestResponseFormat(t *testing.T) {
	e := byteEnv(t, plainTemplate)
	msgs := `"messages":[{"role":"user","content":"Describe a person."}],"max_tokens":300`
	forms := []string{
		`"response_format":{"type":"json_schema","json_schema":{"name":"person","strict":true,"schema":` + personSchema + `}}`,
		`"response_format":{"type":"json_object","schema":` + personSchema + `}`,
		`"json_schema":` + personSchema,
	}
	for i, form := range forms {
		for seed := range 3 {
			var out chatOut
			e.post(t, "/v1/chat/completions", fmt.Sprintf(`{%s,%s,"seed":%d}`, msgs, form, seed), &out)
			c := out.Choices[0]
			if c.FinishReason != "stop" || c.Message.Content == nil {
				t.Fatalf("form %d: finish %q content %v", i, c.FinishReason, c.Message.Content)
			}
			checkPerson(t, *c.Message.Content)
			code, body := e.do(t, "POST", "/v1/chat/completions", fmt.Sprintf(`{%s,%s,"seed":%d,"stream":true}`, msgs, form, seed))
			if code != 200 {
				t.Fatalf("stream: %d %s", code, body)
			}
			text, finish, _ := streamText(t, sseEvents(t, body))
			if finish != "stop" || text != *c.Message.Content {
				t.Errorf("form %d seed %d: stream %q (%s), whole %q", i, seed, text, finish, *c.Message.Content)
			}
		}
	}
	var out chatOut
	for seed := range 8 {
		e.post(t, "/v1/chat/completions", fmt.Sprintf(`{%s,"response_format":{"type":"json_object"},"max_tokens":1000,"seed":%d}`, msgs, seed), &out)
		checkObject(t, out)
	}
}

// checkObject checks that a json_object answer is an object, or the start
// of one when max_tokens cut it. (JSON numbers are unbounded: json.Valid,
// not a decode into float64.)
func checkObject(t *testing.T, out chatOut) {
	t.Helper()
	if c := out.Choices[0]; c.FinishReason == "stop" && (!json.Valid([]byte(*c.Message.Content)) || !strings.HasPrefix(*c.Message.Content, "{")) {
		t.Errorf("json_object: %q is not an object", *c.Message.Content)
	} else if c.FinishReason != "stop" && !strings.HasPrefix(*c.Message.Content, "{") {
		t.Errorf("json_object: %q (%s) does not start an object", *c.Message.Content, c.FinishReason)
	}
}

// TestGrammarCacheBound checks that the cache keeps at most
// maxCachedGrammars grammars, the most recently used ones.
func TestGrammarCacheBound(t *testing.T) {
	e := byteEnv(t, plainTemplate)
	for i := range maxCachedGrammars + 6 {
		var out struct{}
		e.post(t, "/v1/completions", fmt.Sprintf(`{"prompt":"q","max_tokens":4,"grammar":"root ::= \"%d\""}`, i), &out)
	}
	if n := e.api.grammar.len(); n != maxCachedGrammars {
		t.Errorf("%d grammars cached, want %d", n, maxCachedGrammars)
	}
}

// plainTemplate is a ChatML template without tools.
const plainTemplate = `{% for m in messages %}<|im_start|>{{ m.role }}
{{ m.content }}<|im_end|>
{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant
{% endif %}`

// TestConstrainedShareBatch runs constrained and unconstrained requests in
// the same engine steps: each gives what it gives alone.
func TestConstrainedShareBatch(t *testing.T) {
	bodies := []string{
		`{"prompt":"Once","max_tokens":40,"seed":5}`,
		`{"prompt":"Once","max_tokens":40,"seed":6,"grammar":"root ::= [a-z ]{10,30} \".\""}`,
		`{"prompt":"Tell","max_tokens":60,"seed":7,"json_schema":{"type":"object","properties":{"n":{"type":"integer"},"b":{"type":"boolean"}},"required":["n","b"]}}`,
		`{"prompt":"Then","max_tokens":40,"seed":8}`,
	}
	type out struct {
		Choices []struct{ Text string } `json:"choices"`
	}
	alone := byteEnv(t, plainTemplate)
	want := make([]string, len(bodies))
	for i, b := range bodies {
		var o out
		alone.post(t, "/v1/completions", b, &o)
		want[i] = o.Choices[0].Text
	}
	gate := make(chan struct{})
	e := byteEnvGate(t, plainTemplate, gate)
	got := make([]string, len(bodies))
	done := make(chan struct{})
	for i, b := range bodies {
		go func() {
			defer func() { done <- struct{}{} }()
			code, body := e.do(t, "POST", "/v1/completions", b)
			var o out
			if code != 200 || json.Unmarshal(body, &o) != nil || len(o.Choices) != 1 {
				t.Errorf("request %d: %d %s", i, code, body)
				return
			}
			got[i] = o.Choices[0].Text
		}()
	}
	for e.sched.Pending() < len(bodies) {
		time.Sleep(time.Millisecond)
	}
	close(gate) // every request is queued or running: later steps hold them all
	for range bodies {
		<-done
	}
	for i := range bodies {
		if got[i] != want[i] {
			t.Errorf("request %d in a shared batch gave %q, alone %q", i, got[i], want[i])
		}
	}
	e.eng.mu.Lock()
	rows := e.eng.maxRows
	e.eng.mu.Unlock()
	if rows < 2 {
		t.Errorf("at most %d sequences per step: the requests did not share a batch", rows)
	}
}
