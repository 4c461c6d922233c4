package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestChoicesN checks n > 1: choice c of prompt p has index p*n+c and is
// the output of the request alone with seed+p*n+c; prompt tokens count
// once per prompt.
func TestChoicesN(t *testing.T) {
	e := newEnv(t, envOptions{queue: 4})
	single := func(prompt string, seed int) string {
		var got completionResponse
		e.post(t, "/v1/completions", fmt.Sprintf(`{"prompt":%q,"max_tokens":10,"seed":%d,"ignore_eos":true}`, prompt, seed), &got)
		return got.Choices[0].Text
	}
	tests := []struct {
		name, prompt string
		prompts      []string // each prompt's text
		n            int
	}{
		{"one prompt", `"ab"`, []string{"ab"}, 3},
		{"two prompts", `["ab","cd"]`, []string{"ab", "cd"}, 2},
		{"three prompts n 1", `["ab","cd","ef"]`, []string{"ab", "cd", "ef"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := fmt.Sprintf(`{"prompt":%s,"max_tokens":10,"seed":40,"ignore_eos":true,"n":%d}`, tt.prompt, tt.n)
			var got completionResponse
			e.post(t, "/v1/completions", body, &got)
			if len(got.Choices) != len(tt.prompts)*tt.n {
				t.Fatalf("%d choices, want %d", len(got.Choices), len(tt.prompts)*tt.n)
			}
			for i, c := range got.Choices {
				p := i / tt.n
				if want := single(tt.prompts[p], 40+i); c.Index != i || c.Text != want {
					t.Errorf("choice %d: index %d text %q, want %q (prompt %d, seed %d)", i, c.Index, c.Text, want, p, 40+i)
				}
			}
			// BOS plus one token per character, once per prompt.
			want := usageJSON{PromptTokens: 3 * len(tt.prompts), CompletionTokens: 10 * len(got.Choices)}
			want.TotalTokens = want.PromptTokens + want.CompletionTokens
			if *got.Usage != want {
				t.Errorf("usage %+v, want %+v", *got.Usage, want)
			}
			// The stream carries the same choices under the same indexes.
			code, raw := e.do(t, "POST", "/v1/completions", strings.Replace(body, "{", `{"stream":true,"stream_options":{"include_usage":true},`, 1))
			if code != 200 {
				t.Fatalf("stream: %d %s", code, raw)
			}
			texts, usage := streamByIndex(t, raw)
			for i, c := range got.Choices {
				if texts[i] != c.Text {
					t.Errorf("streamed choice %d: %q, want %q", i, texts[i], c.Text)
				}
			}
			if len(texts) != len(got.Choices) || usage == nil || *usage != want {
				t.Errorf("stream: %d choices, usage %+v; want %d and %+v", len(texts), usage, len(got.Choices), want)
			}
		})
	}
}

// TestChatChoicesN checks n > 1 on the chat endpoint, streamed and not.
func TestChatChoicesN(t *testing.T) {
	e := newEnv(t, envOptions{})
	body := `{"messages":[{"role":"user","content":"hi"}],"max_tokens":8,"seed":9,"ignore_eos":true,"n":3}`
	var got chatResponse
	e.post(t, "/v1/chat/completions", body, &got)
	if len(got.Choices) != 3 {
		t.Fatalf("%d choices", len(got.Choices))
	}
	for i, c := range got.Choices {
		var one chatResponse
		e.post(t, "/v1/chat/completions", fmt.Sprintf(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":8,"seed":%d,"ignore_eos":true}`, 9+i), &one)
		if c.Index != i || c.Message == nil || *c.Message.Content != *one.Choices[0].Message.Content {
			t.Errorf("choice %d: %+v, want the text %q", i, c, *one.Choices[0].Message.Content)
		}
	}
	code, raw := e.do(t, "POST", "/v1/chat/completions", strings.Replace(body, "{", `{"stream":true,`, 1))
	if code != 200 {
		t.Fatalf("stream: %d %s", code, raw)
	}
	texts, _ := streamByIndex(t, raw)
	roles := strings.Count(string(raw), `"role":"assistant"`)
	if len(texts) != 3 || roles != 3 {
		t.Errorf("stream: %d choices, %d role chunks; want 3 and 3", len(texts), roles)
	}
	for i, c := range got.Choices {
		if texts[i] != *c.Message.Content {
			t.Errorf("streamed choice %d: %q, want %q", i, texts[i], *c.Message.Content)
		}
	}
}

// streamByIndex gathers the text of each choice index of a stream, and its
// usage chunk.
func streamByIndex(t *testing.T, raw []byte) (map[int]string, *usageJSON) {
	t.Helper()
	events := sseEvents(t, raw)
	if len(events) == 0 || events[len(events)-1] != "[DONE]" {
		t.Fatalf("stream does not end with [DONE]: %q", events)
	}
	texts := map[int]string{}
	var usage *usageJSON
	for _, ev := range events[:len(events)-1] {
		var chunk struct {
			Choices []struct {
				Index int    `json:"index"`
				Text  string `json:"text"`
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
			Usage *usageJSON `json:"usage"`
		}
		if err := json.Unmarshal([]byte(ev), &chunk); err != nil {
			t.Fatalf("chunk %q: %v", ev, err)
		}
		for _, c := range chunk.Choices {
			texts[c.Index] += c.Text + c.Delta.Content
		}
		if chunk.Usage != nil {
			usage = chunk.Usage
		}
	}
	return texts, usage
}

func TestModelByID(t *testing.T) {
	e := newEnv(t, envOptions{})
	tests := []struct {
		path   string
		status int
	}{
		{"/v1/models/fake", 200},
		{"/v1/models/other", 404},
		{"/v1/models/org/fake", 404},
	}
	for _, tt := range tests {
		code, body := e.do(t, "GET", tt.path, "")
		if code != tt.status {
			t.Errorf("%s: %d, want %d: %s", tt.path, code, tt.status, body)
			continue
		}
		if code == 200 {
			var m modelJSON
			if err := json.Unmarshal(body, &m); err != nil || m.ID != "fake" || m.Object != "model" || m.Created != 1700000000 {
				t.Errorf("%s: %s", tt.path, body)
			}
			continue
		}
		if got := errorOf(t, body); got.Code != "model_not_found" || !strings.Contains(got.Message, strings.TrimPrefix(tt.path, "/v1/models/")) {
			t.Errorf("%s: %+v", tt.path, got)
		}
	}
}

// TestSeedAndTopP checks seed -1 (a fresh random seed each time) and
// top_p 0 (only the most likely token, the same as greedy).
func TestSeedAndTopP(t *testing.T) {
	e := newEnv(t, envOptions{})
	text := func(params string) string {
		var got completionResponse
		e.post(t, "/v1/completions", `{"prompt":"abc","max_tokens":24,"ignore_eos":true,`+params+`}`, &got)
		return got.Choices[0].Text
	}
	if a, b := text(`"seed":-1`), text(`"seed":-1`); a == b {
		t.Errorf("seed -1 twice gave the same %q", a)
	}
	if a, b := text(`"seed":-1,"temperature":1.5,"top_p":0`), text(`"temperature":0`); a != b {
		t.Errorf("top_p 0 gave %q, greedy %q", a, b)
	}
}

// oddTokenizer is the fake tokenizer with a token that is not valid UTF-8
// on its own ('?' stands for the first two bytes of "€"), EOS spelled as
// its text, control tokens marked, and the last parse_special recorded.
type oddTokenizer struct {
	fakeTokenizer
	parseSpecial *bool // the parseSpecial of the last Encode
	encodes      *int  // Encode calls
}

func (o oddTokenizer) TokenBytes(id int32) []byte {
	switch id {
	case 2:
		return []byte{0xe2, 0x82}
	case fakeEOS, fakeBOS:
		return []byte(o.TokenText(id))
	}
	return o.fakeTokenizer.TokenBytes(id)
}

func (o oddTokenizer) IsControl(id int32) bool { return id == fakeEOS || id == fakeBOS }

func (o oddTokenizer) Encode(text string, addSpecial, parseSpecial bool) ([]int32, error) {
	*o.parseSpecial = parseSpecial
	*o.encodes++
	return o.fakeTokenizer.Encode(text, addSpecial, parseSpecial)
}

func withOddTokenizer(t *testing.T, e *testEnv) oddTokenizer {
	t.Helper()
	m, err := e.api.loaded()
	if err != nil {
		t.Fatal(err)
	}
	tok := oddTokenizer{parseSpecial: new(bool), encodes: new(int)}
	e.api.SetModel(&Model{Name: m.Name, Scheduler: m.Scheduler, Tokenizer: tok, Chat: m.Chat, Created: m.Created})
	return tok
}

func TestTokenizePieces(t *testing.T) {
	e := newEnv(t, envOptions{})
	tok := withOddTokenizer(t, e)
	code, body := e.do(t, "POST", "/tokenize", `{"content":"a?","with_pieces":true}`)
	want := `{"tokens":[{"id":3,"piece":"a"},{"id":2,"piece":[226,130]}]}`
	if code != 200 || strings.TrimSpace(string(body)) != want {
		t.Errorf("pieces: %d %s, want %s", code, body, want)
	}
	for _, tt := range []struct {
		body string
		want bool
	}{
		{`{"content":"a"}`, true},
		{`{"content":"a","parse_special":false}`, false},
		{`{"content":"a","parse_special":true}`, true},
	} {
		if code, body := e.do(t, "POST", "/tokenize", tt.body); code != 200 || *tok.parseSpecial != tt.want {
			t.Errorf("%s: %d %s, parse_special %v, want %v", tt.body, code, body, *tok.parseSpecial, tt.want)
		}
	}
}

// TestCompletionLogprobsControlTokens forces EOS (kept going by
// ignore_eos): its tokens add nothing to the text, and logprobs must show
// them so, whatever the tokenizer's spelling of EOS.
func TestCompletionLogprobsControlTokens(t *testing.T) {
	e := newEnv(t, envOptions{})
	withOddTokenizer(t, e)
	body := `{"prompt":"ab","max_tokens":3,"logprobs":1,"ignore_eos":true,"logit_bias":{"0":100}}`
	var got completionResponse
	e.post(t, "/v1/completions", body, &got)
	lp := got.Choices[0].Logprobs
	if lp == nil || len(lp.Tokens) != 3 || strings.Join(lp.Tokens, "") != got.Choices[0].Text || fmt.Sprint(lp.TextOffset) != "[0 0 0]" {
		t.Errorf("text %q, logprobs %+v", got.Choices[0].Text, lp)
	}
	code, raw := e.do(t, "POST", "/v1/completions", strings.Replace(body, "{", `{"stream":true,`, 1))
	if code != 200 || bytes.Contains(raw, []byte("</s>")) {
		t.Errorf("stream: %d %s", code, raw)
	}
}

// TestChatTopLogprobsAlwaysSent checks that every chat logprob entry has
// top_logprobs, [] when none were asked for.
func TestChatTopLogprobsAlwaysSent(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, stream := range []bool{false, true} {
		body := fmt.Sprintf(`{"messages":[{"role":"user","content":"x"}],"max_tokens":3,"logprobs":true,"ignore_eos":true,"stream":%v}`, stream)
		code, raw := e.do(t, "POST", "/v1/chat/completions", body)
		if n := bytes.Count(raw, []byte(`"top_logprobs":[]`)); code != 200 || n != 3 {
			t.Errorf("stream %v: %d, %d empty top_logprobs, want 3: %s", stream, code, n, raw)
		}
	}
}

// TestEarlyLengthRefusal checks that a prompt whose byte length alone
// proves it cannot fit is refused without being tokenized, and that one
// that might fit is tokenized. The fake's longest token is 4 bytes ("</s>").
func TestEarlyLengthRefusal(t *testing.T) {
	e := newEnv(t, envOptions{ctx: 32})
	tok := withOddTokenizer(t, e)
	tests := []struct {
		name, path, body string
		param            string
		tokenized        bool
	}{
		{"prompt of 128 bytes", "/v1/completions", `{"prompt":"` + strings.Repeat("a", 128) + `"}`, "prompt", false},
		{"second prompt of 4 KiB", "/v1/completions", `{"prompt":["a","` + strings.Repeat("a", 4096) + `"]}`, "prompt[1]", true},
		{"chat content of 128 bytes", "/v1/chat/completions", `{"messages":[{"role":"user","content":"` + strings.Repeat("a", 128) + `"}]}`, "messages", false},
		{"prompt of 40 bytes", "/v1/completions", `{"prompt":"` + strings.Repeat("a", 40) + `"}`, "prompt", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			*tok.encodes = 0
			code, body := e.do(t, "POST", tt.path, tt.body)
			got := errorOf(t, body)
			if code != 400 || got.Param != tt.param || got.Code != "context_length_exceeded" {
				t.Errorf("%d %+v, want 400 %s context_length_exceeded", code, got, tt.param)
			}
			// The first prompt of the array is short and tokenized.
			if tokenized := *tok.encodes > 0; tokenized != tt.tokenized {
				t.Errorf("%d Encode calls, want some: %v", *tok.encodes, tt.tokenized)
			}
		})
	}
}

func TestJSONTextValid(t *testing.T) {
	tests := []struct {
		raw  string
		want bool
	}{
		{`"plain"`, true},
		{`"\ud83d\ude00"`, true},
		{`"\\ud800"`, true},
		{`"\\\ud800"`, false},
		{`"\ud800"`, false},
		{`"\udc00\ud800"`, false},
		{`"\ud800\u0041"`, false},
		{`"\ud800\`, false},
		{`"\u00e9 \n \" \u20ac"`, true},
		{"\"\xff\"", false},
		{"\"\xe2\x82\xac\"", true},
		{`["a",{"b":"\uDBFF\uDFFF"}]`, true},
	}
	for _, tt := range tests {
		if got := jsonTextValid([]byte(tt.raw)); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.raw, got, tt.want)
		}
	}
}

// boundedTokenizer is the fake tokenizer with EncodeAtMost; it records the
// limit it was given.
type boundedTokenizer struct {
	fakeTokenizer
	limit *int
}

func (b boundedTokenizer) EncodeAtMost(text string, addSpecial, parseSpecial bool, limit int) ([]int32, bool, error) {
	*b.limit = limit
	ids, err := b.Encode(text, addSpecial, parseSpecial)
	if len(ids) > limit {
		return ids[:limit+1], true, err
	}
	return ids, false, err
}

// TestBoundedTokenizing checks that prompts are tokenized with the
// context as the limit when the tokenizer can stop early, and that going
// past it is a context_length_exceeded error.
func TestBoundedTokenizing(t *testing.T) {
	e := newEnv(t, envOptions{ctx: 32})
	m, _ := e.api.loaded()
	tok := boundedTokenizer{limit: new(int)}
	e.api.SetModel(&Model{Name: m.Name, Scheduler: m.Scheduler, Tokenizer: tok, Chat: m.Chat, Created: m.Created})
	tests := []struct {
		name, path, body string
		status           int
		param            string
	}{
		{"prompt fits", "/v1/completions", `{"prompt":"` + strings.Repeat("a", 20) + `","max_tokens":2}`, 200, ""},
		{"prompt too long", "/v1/completions", `{"prompt":"` + strings.Repeat("a", 40) + `"}`, 400, "prompt"},
		{"second prompt too long", "/v1/completions", `{"prompt":["a","` + strings.Repeat("a", 31) + `"]}`, 400, "prompt[1]"},
		{"chat too long", "/v1/chat/completions", `{"messages":[{"role":"user","content":"` + strings.Repeat("a", 30) + `"}]}`, 400, "messages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			*tok.limit = 0
			code, body := e.do(t, "POST", tt.path, tt.body)
			if code != tt.status || *tok.limit != 31 {
				t.Fatalf("status %d limit %d, want %d and 31: %s", code, *tok.limit, tt.status, body)
			}
			if code != 200 {
				if got := errorOf(t, body); got.Param != tt.param || got.Code != "context_length_exceeded" || !strings.Contains(got.Message, "more than 31") {
					t.Errorf("%+v, want param %s", got, tt.param)
				}
			}
		})
	}
}
