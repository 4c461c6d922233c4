package tokenizer

import (
	"strings"
	"testing"

	"llmserve/gguf"
	"llmserve/internal/shared"
)

// benchText is about 10 kB of mixed text: prose, code, numbers, non-Latin
// scripts and emoji.
func benchText() string {
	const para = "The quick brown fox jumps over the lazy dog's back, doesn't it? " +
		"func main() { fmt.Println(\"héllo, wörld\", 3.14159, 1234567) }\n\n" +
		"Привет мир! 你好，世界。 こんにちは 🦙🚀 — naïve café résumé.\n\t  indented line\n"
	var b strings.Builder
	for b.Len() < 10000 {
		b.WriteString(para)
	}
	return b.String()
}

func benchmarkEncode(b *testing.B, vocab string) {
	tok := loadVocab(b, vocab)
	text := benchText()
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := tok.Encode(text, true, false); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeLlama3(b *testing.B) { benchmarkEncode(b, "ggml-vocab-llama-bpe.gguf") }
func BenchmarkEncodeQwen2(b *testing.B)  { benchmarkEncode(b, "ggml-vocab-qwen2.gguf") }
func BenchmarkEncodeSPM(b *testing.B)    { benchmarkEncode(b, "ggml-vocab-llama-spm.gguf") }

// BenchmarkLoadLlama3 measures building the 128k-token Llama-3 tokenizer
// from its GGUF file.
func BenchmarkLoadLlama3(b *testing.B) {
	p := shared.Path(b, "vocab/ggml-vocab-llama-bpe.gguf")
	for b.Loop() {
		if _, err := Load(p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeStream(b *testing.B) {
	tok := loadVocab(b, "ggml-vocab-llama-bpe.gguf")
	ids, _ := tok.Encode(benchText(), false, false)
	b.ResetTimer()
	for b.Loop() {
		d := tok.NewStreamDecoder()
		for _, id := range ids {
			d.Add(id)
		}
		d.Flush()
	}
}

// BenchmarkNewLlama3 measures building the Llama-3 tokenizer from metadata
// already read.
func BenchmarkNewLlama3(b *testing.B) {
	f, err := gguf.Open(shared.Path(b, "vocab/ggml-vocab-llama-bpe.gguf"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	for b.Loop() {
		if _, err := FromGGUF(f); err != nil {
			b.Fatal(err)
		}
	}
}
