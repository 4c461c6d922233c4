package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"testing"

	"llmserve/decode"
	"llmserve/gguf"
	"llmserve/internal/shared"
	"llmserve/model"
	"llmserve/model/tokenizer"
)

// TestGenerateStoriesGolden generates 255 greedy tokens from BOS on
// stories260K and compares the streamed text with the reference text.
func TestGenerateStoriesGolden(t *testing.T) {
	want, err := os.ReadFile(shared.Path(t, "models/stories260K.greedy.txt"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(shared.Path(t, "models/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := model.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	e, err := decode.NewCPUEngine(m, decode.CPUOptions{Context: 512})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	if err := generate(context.Background(), e, tok, []int32{tok.BOS()}, 255, decode.SamplerParams{}, nil, w); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	if got := bytes.TrimSuffix(buf.Bytes(), []byte("\n")); !bytes.Equal(got, want) {
		t.Errorf("generated text differs\n got %q\nwant %q", got, want)
	}
}
