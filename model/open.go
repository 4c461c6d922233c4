package model

import (
	"fmt"

	"llmserve/gguf"
	"llmserve/model/tokenizer"
)

// Open maps the GGUF file at path, describes the model in it and, when the
// file carries a tokenizer, checks that the tokenizer builds and that every
// token id it can produce has a row in token_embd. Every failure is one
// line. The caller closes the file once done with the model.
func Open(path string) (*gguf.File, *Model, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, nil, err
	}
	m, err := LoadChecked(f)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, m, nil
}

// LoadChecked is Load followed by the tokenizer check of Open, for a file
// that is already parsed.
func LoadChecked(f *gguf.File) (*Model, error) {
	m, err := Load(f)
	if err != nil {
		return nil, err
	}
	if err := checkTokenizer(f, m); err != nil {
		return nil, err
	}
	return m, nil
}

// checkTokenizer builds the tokenizer of f, when it has one, and compares
// its size with the model's vocabulary.
func checkTokenizer(f *gguf.File, m *Model) error {
	if !f.Has("tokenizer.ggml.model") {
		return nil
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return fmt.Errorf("model: %w", err)
	}
	if n := tok.VocabSize(); n > m.Vocab {
		return fmt.Errorf("model: tokenizer has %d tokens, token_embd.weight only %d rows", n, m.Vocab)
	}
	return nil
}
