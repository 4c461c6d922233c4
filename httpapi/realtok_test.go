package httpapi

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"llmserve/internal/shared"
	"llmserve/model/tokenizer"
)

// The real tokenizer offers every optional method the handlers look for.
var _ interface {
	Tokenizer
	tokenByteser
	atMostEncoder
	controlTokens
} = (*tokenizer.Tokenizer)(nil)

// realTokenizerEnv is a test server of the fake engine whose model has the
// tokenizer of stories260K.
func realTokenizerEnv(t *testing.T) (*testEnv, *tokenizer.Tokenizer) {
	t.Helper()
	tok, err := tokenizer.Load(shared.Path(t, "models/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envOptions{})
	m, _ := e.api.loaded()
	e.api.SetModel(&Model{Name: m.Name, Scheduler: m.Scheduler, Tokenizer: tok, Chat: m.Chat, Created: m.Created})
	return e, tok
}

// TestLongPromptRealTokenizer refuses over-long prompts with the tokenizer
// of stories260K: a 3 MB prompt by its length alone, a 2 KB one (which its
// length cannot rule out) while tokenizing.
func TestLongPromptRealTokenizer(t *testing.T) {
	e, _ := realTokenizerEnv(t)
	tests := []struct {
		name, text, msg string
	}{
		{"3 MB", strings.Repeat("Once upon a time, ", 3<<20/18), "bytes"},
		{"2 KB", strings.Repeat("Once upon a time, ", 2048/18), "more than 255 tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, body := range []string{`{"prompt":"` + tt.text + `"}`, `{"messages":[{"role":"user","content":"` + tt.text + `"}]}`} {
				path := "/v1/completions"
				if strings.Contains(body, "messages") {
					path = "/v1/chat/completions"
				}
				code, resp := e.do(t, "POST", path, body)
				got := errorOf(t, resp)
				if code != 400 || got.Code != "context_length_exceeded" || !strings.Contains(got.Message, tt.msg) {
					t.Errorf("%s: %d %+v, want 400 context_length_exceeded with %q", path, code, got, tt.msg)
				}
			}
		})
	}
}

// TestTokenizeLongRealTokenizer checks that /tokenize of a text long
// enough to be merged in segments gives exactly Encode's tokens.
func TestTokenizeLongRealTokenizer(t *testing.T) {
	e, tok := realTokenizerEnv(t)
	text := strings.Repeat("Once upon a time,  there was\ta little  girl named Lily.\n ", 400)
	want, _ := tok.Encode(text, true, false)
	body, _ := json.Marshal(map[string]any{"content": text, "add_special": true, "parse_special": false})
	var got struct{ Tokens []int32 }
	e.post(t, "/tokenize", string(body), &got)
	if !slices.Equal(got.Tokens, want) {
		t.Errorf("%d tokens, Encode gives %d", len(got.Tokens), len(want))
	}
}
