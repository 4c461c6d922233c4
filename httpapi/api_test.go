package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

func TestHealthWhileLoading(t *testing.T) {
	e := newEnv(t, envOptions{notLoaded: true})
	code, body := e.do(t, "GET", "/health", "")
	if code != http.StatusServiceUnavailable || strings.TrimSpace(string(body)) != `{"status":"loading"}` {
		t.Errorf("health while loading: %d %s", code, body)
	}
	code, body = e.do(t, "POST", "/v1/completions", `{"prompt":"a"}`)
	if code != http.StatusServiceUnavailable || errorOf(t, body).Code != "model_loading" {
		t.Errorf("completion while loading: %d %s", code, body)
	}
	e2 := newEnv(t, envOptions{})
	if code, body := e2.do(t, "GET", "/health", ""); code != http.StatusOK || strings.TrimSpace(string(body)) != `{"status":"ok"}` {
		t.Errorf("health when loaded: %d %s", code, body)
	}
}

func TestModels(t *testing.T) {
	e := newEnv(t, envOptions{})
	var got struct {
		Object string      `json:"object"`
		Data   []modelJSON `json:"data"`
	}
	code, body := e.do(t, "GET", "/v1/models", "")
	if code != 200 || json.Unmarshal(body, &got) != nil {
		t.Fatalf("%d %s", code, body)
	}
	if got.Object != "list" || len(got.Data) != 1 || got.Data[0].ID != "fake" || got.Data[0].Object != "model" || got.Data[0].Created != 1700000000 {
		t.Errorf("models: %s", body)
	}
}

func TestCompletion(t *testing.T) {
	e := newEnv(t, envOptions{})
	var got completionResponse
	e.post(t, "/v1/completions", `{"model":"fake","prompt":"once upon","max_tokens":12,"seed":5,"ignore_eos":true}`, &got)
	if !strings.HasPrefix(got.ID, "cmpl-") || got.Object != "text_completion" || got.Model != "fake" || got.Created == 0 {
		t.Errorf("envelope: %+v", got)
	}
	if len(got.Choices) != 1 || got.Choices[0].FinishReason == nil || *got.Choices[0].FinishReason != "length" {
		t.Fatalf("choices: %+v", got.Choices)
	}
	// BOS plus one token per character; every fake token is one character.
	want := usageJSON{PromptTokens: 10, CompletionTokens: 12, TotalTokens: 22}
	if *got.Usage != want || len(got.Choices[0].Text) != 12 {
		t.Errorf("usage %+v text %q, want %+v and 12 characters", *got.Usage, got.Choices[0].Text, want)
	}
	var again completionResponse
	e.post(t, "/v1/completions", `{"prompt":"once upon","max_tokens":12,"seed":5,"ignore_eos":true}`, &again)
	if again.Choices[0].Text != got.Choices[0].Text {
		t.Errorf("same seed gave %q then %q", got.Choices[0].Text, again.Choices[0].Text)
	}
}

func TestCompletionPromptForms(t *testing.T) {
	e := newEnv(t, envOptions{})
	ids, _ := fakeTokenizer{}.Encode("the cat", true, true)
	idsJSON, _ := json.Marshal(ids)
	text := func(prompt string) []string {
		var got completionResponse
		e.post(t, "/v1/completions", `{"prompt":`+prompt+`,"max_tokens":8,"temperature":0,"ignore_eos":true}`, &got)
		var out []string
		for i, c := range got.Choices {
			if c.Index != i {
				t.Errorf("choice %d has index %d", i, c.Index)
			}
			out = append(out, c.Text)
		}
		return out
	}
	one := text(`"the cat"`)
	tests := []struct {
		name, prompt string
		want         []string
	}{
		{"array of one string", `["the cat"]`, one},
		{"token ids", string(idsJSON), one},
		{"array of token id arrays", "[" + string(idsJSON) + "]", one},
		{"two strings", `["the cat", "the cat"]`, []string{one[0], one[0]}},
	}
	for _, tt := range tests {
		if got := text(tt.prompt); fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestChatCompletion(t *testing.T) {
	e := newEnv(t, envOptions{})
	var got chatResponse
	e.post(t, "/v1/chat/completions", `{"model":"fake","messages":[{"role":"system","content":"be brief"},
		{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_completion_tokens":5,"ignore_eos":true}`, &got)
	if !strings.HasPrefix(got.ID, "chatcmpl-") || got.Object != "chat.completion" || len(got.Choices) != 1 {
		t.Fatalf("envelope: %+v", got)
	}
	c := got.Choices[0]
	if c.Message == nil || c.Message.Role != "assistant" || c.Message.Content == nil || len(*c.Message.Content) != 5 ||
		*c.FinishReason != "length" {
		t.Errorf("choice: %+v", c)
	}
	// The chatml rendering of the two messages, tokenized with BOS.
	rendered := "<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
	if got.Usage.PromptTokens != len(rendered)+1 {
		t.Errorf("prompt tokens %d, want %d", got.Usage.PromptTokens, len(rendered)+1)
	}
}

func TestStopString(t *testing.T) {
	e := newEnv(t, envOptions{})
	var free completionResponse
	e.post(t, "/v1/completions", `{"prompt":"abc","max_tokens":40,"seed":3,"ignore_eos":true}`, &free)
	full := free.Choices[0].Text
	stop := full[10:12]
	var got completionResponse
	body, _ := json.Marshal(map[string]any{"prompt": "abc", "max_tokens": 40, "seed": 3, "ignore_eos": true, "stop": []string{stop}})
	e.post(t, "/v1/completions", string(body), &got)
	want := full[:strings.Index(full, stop)]
	if got.Choices[0].Text != want || *got.Choices[0].FinishReason != "stop" {
		t.Errorf("stop %q: %q (%s), want %q (stop)", stop, got.Choices[0].Text, *got.Choices[0].FinishReason, want)
	}
}

func TestLogprobs(t *testing.T) {
	e := newEnv(t, envOptions{})
	var comp completionResponse
	e.post(t, "/v1/completions", `{"prompt":"ab","max_tokens":4,"logprobs":2,"ignore_eos":true}`, &comp)
	lp := comp.Choices[0].Logprobs
	if lp == nil || len(lp.Tokens) != 4 || len(lp.TokenLogprobs) != 4 || len(lp.TopLogprobs) != 4 ||
		strings.Join(lp.Tokens, "") != comp.Choices[0].Text {
		t.Fatalf("completion logprobs: %+v for text %q", lp, comp.Choices[0].Text)
	}
	for i, top := range lp.TopLogprobs {
		if len(top) == 0 || len(top) > 2 || lp.TokenLogprobs[i] > 0 {
			t.Errorf("token %d: logprob %v, top %v", i, lp.TokenLogprobs[i], top)
		}
	}
	var ch chatResponse
	e.post(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_tokens":3,"logprobs":true,"top_logprobs":3,"ignore_eos":true}`, &ch)
	clp := ch.Choices[0].Logprobs
	if clp == nil || len(clp.Content) != 3 {
		t.Fatalf("chat logprobs: %+v", clp)
	}
	for _, c := range clp.Content {
		if len(c.TopLogprobs) != 3 || c.TopLogprobs[0].Logprob < c.TopLogprobs[2].Logprob || len(c.Bytes) != len(c.Token) {
			t.Errorf("chat token logprob %+v", c)
		}
	}
}

func TestTokenize(t *testing.T) {
	e := newEnv(t, envOptions{})
	var tok struct{ Tokens []int32 }
	e.post(t, "/tokenize", `{"content":"hi there","add_special":true}`, &tok)
	want, _ := fakeTokenizer{}.Encode("hi there", true, true)
	if fmt.Sprint(tok.Tokens) != fmt.Sprint(want) {
		t.Errorf("tokens %v, want %v", tok.Tokens, want)
	}
	var detok struct{ Content string }
	body, _ := json.Marshal(map[string]any{"tokens": tok.Tokens})
	e.post(t, "/detokenize", string(body), &detok)
	if detok.Content != "hi there" {
		t.Errorf("detokenized %q", detok.Content)
	}
	var pieces struct {
		Tokens []struct {
			ID    int32
			Piece string
		}
	}
	e.post(t, "/tokenize", `{"content":"ab","with_pieces":true}`, &pieces)
	if len(pieces.Tokens) != 2 || pieces.Tokens[0].Piece != "a" || pieces.Tokens[1].Piece != "b" {
		t.Errorf("pieces %+v", pieces)
	}
}

func TestMetricsEndpoint(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.do(t, "POST", "/v1/completions", `{"prompt":"a","max_tokens":3,"ignore_eos":true}`)
	e.do(t, "POST", "/v1/completions", `{`)
	code, body := e.do(t, "GET", "/metrics", "")
	if code != 200 {
		t.Fatalf("metrics: %d", code)
	}
	for _, want := range []string{
		`llmserve_http_requests_total{code="200"} 1`,
		`llmserve_http_requests_total{code="400"} 1`,
		"llmserve_generated_tokens_total 3\n",
		"llmserve_slots_total 4\n",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
}
