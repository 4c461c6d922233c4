package toolcall

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"llmserve/grammar"
	"llmserve/internal/shared"
	"llmserve/model/tokenizer"
)

// benchTools is 4 tools of 5 properties each (20 in all).
func benchTools() []Tool {
	var tools []Tool
	for i := range 4 {
		var props []string
		for j := range 5 {
			kind := []string{`{"type":"string","maxLength":32}`, `{"type":"integer"}`, `{"type":"boolean"}`, `{"enum":["a","b","c"]}`, `{"type":"array","items":{"type":"number"},"maxItems":4}`}[j]
			props = append(props, fmt.Sprintf(`"p%d":%s`, j, kind))
		}
		tools = append(tools, Tool{Name: fmt.Sprintf("tool_%d", i), Parameters: json.RawMessage(`{"type":"object","properties":{` +
			strings.Join(props, ",") + `},"required":["p0","p1"]}`)})
	}
	return tools
}

// BenchmarkToolGrammar is the cost of a tool_choice "required" grammar for
// 4 tools of 5 properties: translating and compiling it, and with the
// 128256-token llama-bpe vocabulary its first mask.
func BenchmarkToolGrammar(b *testing.B) {
	tools := benchTools()
	b.Run("translate+compile", func(b *testing.B) {
		for b.Loop() {
			src, err := Grammar(Hermes, tools, true)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := grammar.Parse(src); err != nil {
				b.Fatal(err)
			}
		}
	})
	tok, err := tokenizer.Load(shared.Path(b, "vocab/ggml-vocab-llama-bpe.gguf"))
	if err != nil {
		b.Fatal(err)
	}
	v, err := grammar.VocabOf(tok)
	if err != nil {
		b.Fatal(err)
	}
	src, _ := Grammar(Llama3, tools, true)
	g, err := grammar.Parse(src)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("engine+first mask", func(b *testing.B) {
		mask := make([]uint64, v.MaskWords())
		for b.Loop() {
			e, err := grammar.NewEngine(g, v)
			if err != nil {
				b.Fatal(err)
			}
			m, _ := e.NewMatcher()
			if err := m.Allowed(mask); err != nil {
				b.Fatal(err)
			}
		}
	})
}
