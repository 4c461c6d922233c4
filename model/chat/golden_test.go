package chat

import (
	"encoding/json"
	"os"
	"testing"

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
