package chat

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"llmserve/gguf"
	"llmserve/internal/shared"
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

// vocabMeta is what a chat template needs from a vocabulary's GGUF.
type vocabMeta struct {
	template string
	bos, eos string // text of the BOS and EOS tokens
}

func readVocabMeta(path string) (vocabMeta, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return vocabMeta{}, err
	}
	defer f.Close()
	var m vocabMeta
	if m.template, err = f.String("tokenizer.chat_template"); err != nil {
		return m, err
	}
	tokens, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil {
		return m, err
	}
	for key, dst := range map[string]*string{"tokenizer.ggml.bos_token_id": &m.bos, "tokenizer.ggml.eos_token_id": &m.eos} {
		id, err := f.Uint32(key)
		if err != nil {
			return m, err
		}
		if int(id) >= len(tokens) {
			return m, fmt.Errorf("%s %d out of range (%d tokens)", key, id, len(tokens))
		}
		*dst = tokens[id]
	}
	return m, nil
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
	for family, vocab := range goldenVocab {
		t.Run(family, func(t *testing.T) {
			cases := golden[family]
			if len(cases) == 0 {
				t.Fatalf("no %s conversations in chat-golden.json", family)
			}
			meta, err := readVocabMeta(shared.Path(t, vocab))
			if err != nil {
				t.Fatal(err)
			}
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

func TestDetectGoldenTemplates(t *testing.T) {
	for family, want := range map[string]string{"llama3": "llama3", "qwen3": "chatml"} {
		meta, err := readVocabMeta(shared.Path(t, goldenVocab[family]))
		if err != nil {
			t.Fatal(err)
		}
		if got := Detect(meta.template); got != want {
			t.Errorf("Detect(%s template) = %q, want %q", family, got, want)
		}
	}
}

// Tools, tool calls, tool results, thinking and enable_thinking through the
// Qwen3 template. The expected prompts are what transformers renders.
func TestQwen3Tools(t *testing.T) {
	meta, err := readVocabMeta(shared.Path(t, goldenVocab["qwen3"]))
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := New(meta.template)
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
	meta, err := readVocabMeta(shared.Path(b, goldenVocab["qwen3"]))
	if err != nil {
		b.Fatal(err)
	}
	tmpl, err := New(meta.template)
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
