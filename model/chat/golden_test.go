package chat

import (
	"encoding/json"
	"os"
	"slices"
	"testing"

	"llmserve/gguf"
	"llmserve/internal/shared"
	"llmserve/model/tokenizer"
)

// goldenCase is one conversation of golden/chat-golden.json.
type goldenCase struct {
	Messages            []Message `json:"messages"`
	AddGenerationPrompt bool      `json:"add_generation_prompt"`
	Rendered            string    `json:"rendered"`
	IDs                 []int32   `json:"ids"`
}

// goldenVocab names the vocabulary GGUF whose chat template each family of
// the golden file was rendered with.
var goldenVocab = map[string]string{
	"llama3": "vocab/ggml-vocab-llama-bpe.gguf",
	"qwen3":  "vocab/ggml-vocab-qwen2.gguf",
}

// vocab is what the golden tests need from a vocabulary's GGUF.
type vocab struct {
	template string
	bos, eos string // text of the BOS and EOS tokens
	tok      *tokenizer.Tokenizer
}

func loadVocab(t testing.TB, family string) vocab {
	t.Helper()
	f, err := gguf.Open(shared.Path(t, goldenVocab[family]))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	src, err := f.String("tokenizer.chat_template")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return vocab{template: src, bos: tok.TokenText(tok.BOS()), eos: tok.TokenText(tok.EOS()), tok: tok}
}

// goldenTemplate reads only the chat template of a family's vocabulary.
func goldenTemplate(t testing.TB, family string) string {
	t.Helper()
	f, err := gguf.Open(shared.Path(t, goldenVocab[family]))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	src, err := f.String("tokenizer.chat_template")
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func loadGolden(t *testing.T) map[string][]goldenCase {
	t.Helper()
	data, err := os.ReadFile(shared.Path(t, "golden/chat-golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g map[string][]goldenCase
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatalf("chat-golden.json: %v", err)
	}
	return g
}

func TestGoldenRender(t *testing.T) {
	golden := loadGolden(t)
	for family := range goldenVocab {
		t.Run(family, func(t *testing.T) {
			cases := golden[family]
			if len(cases) == 0 {
				t.Fatalf("no %s conversations in chat-golden.json", family)
			}
			meta := loadVocab(t, family)
			tmpl, err := New(meta.template)
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range cases {
				got, err := tmpl.Render(c.Messages, Options{
					AddGenerationPrompt: c.AddGenerationPrompt,
					BOSToken:            meta.bos,
					EOSToken:            meta.eos,
				})
				if err != nil {
					t.Errorf("conversation %d: %v", i, err)
					continue
				}
				if got != c.Rendered {
					t.Errorf("conversation %d:\n got %q\nwant %q", i, got, c.Rendered)
				}
			}
		})
	}
}

// The rendered prompts, tokenized with special-token text parsed and no
// BOS added, must be the golden token ids.
func TestGoldenTokens(t *testing.T) {
	golden := loadGolden(t)
	for family := range goldenVocab {
		t.Run(family, func(t *testing.T) {
			meta := loadVocab(t, family)
			tmpl, err := New(meta.template)
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range golden[family] {
				prompt, err := tmpl.Render(c.Messages, Options{AddGenerationPrompt: c.AddGenerationPrompt, BOSToken: meta.bos, EOSToken: meta.eos})
				if err != nil {
					t.Fatalf("conversation %d: %v", i, err)
				}
				ids, err := meta.tok.Encode(prompt, false, true)
				if err != nil {
					t.Fatalf("conversation %d: %v", i, err)
				}
				if !slices.Equal(ids, c.IDs) {
					t.Errorf("conversation %d: %q\n got %v\nwant %v", i, prompt, ids, c.IDs)
				}
			}
		})
	}
}

func TestDetectGoldenTemplates(t *testing.T) {
	for family, want := range map[string]string{"llama3": "llama3", "qwen3": "chatml"} {
		if got := Detect(goldenTemplate(t, family)); got != want {
			t.Errorf("Detect(%s template) = %q, want %q", family, got, want)
		}
	}
}

// Tools, tool calls, tool results, thinking and enable_thinking through the
// Qwen3 template. The expected prompts are what transformers renders.
func TestQwen3Tools(t *testing.T) {
	tmpl, err := New(goldenTemplate(t, "qwen3"))
	if err != nil {
		t.Fatal(err)
	}
	conv := []Message{
		{Role: "user", Content: "Weather in Paris?"},
		{Role: "assistant", ToolCalls: []ToolCall{{ID: "c1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
		{Role: "tool", Content: `{"temp": 21}`, ToolCallID: "c1"},
		{Role: "assistant", Content: "<think>\nwarm\n</think>\n\nIt is 21 °C."},
	}
	tools := `[{"type":"function","function":{"name":"get_weather","description":"Weather <now> & later",` +
		`"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]`
	tests := []struct {
		name string
		msgs []Message
		opts Options
		want string
	}{
		{"tools", conv, Options{Tools: json.RawMessage(tools)},
			"<|im_start|>system\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
				"You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" +
				`{"type": "function", "function": {"name": "get_weather", "description": "Weather <now> & later", ` +
				`"parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}` +
				"\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n" +
				"<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" +
				"<|im_start|>user\nWeather in Paris?<|im_end|>\n" +
				"<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call><|im_end|>\n" +
				"<|im_start|>user\n<tool_response>\n{\"temp\": 21}\n</tool_response><|im_end|>\n" +
				"<|im_start|>assistant\n<think>\nwarm\n</think>\n\nIt is 21 °C.<|im_end|>\n"},
		{"thinking off", conv[:1], Options{AddGenerationPrompt: true, Vars: map[string]any{"enable_thinking": false}},
			"<|im_start|>user\nWeather in Paris?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tmpl.Render(tc.msgs, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func BenchmarkRenderQwen3(b *testing.B) {
	tmpl, err := New(goldenTemplate(b, "qwen3"))
	if err != nil {
		b.Fatal(err)
	}
	msgs := []Message{
		{Role: "system", Content: "You are a pirate."},
		{Role: "user", Content: "Hi"},
		{Role: "assistant", Content: "Arr, ahoy!"},
		{Role: "user", Content: "Where's the treasure?"},
	}
	for b.Loop() {
		if _, err := tmpl.Render(msgs, Options{AddGenerationPrompt: true}); err != nil {
			b.Fatal(err)
		}
	}
}
