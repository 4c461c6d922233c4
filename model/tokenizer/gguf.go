package tokenizer

import "llmserve/gguf"

// FromGGUF builds the tokenizer described by a GGUF file's metadata.
func FromGGUF(f *gguf.File) (*Tokenizer, error) {
	v, err := VocabFromMetadata(f)
	if err != nil {
		return nil, err
	}
	return New(v)
}

// Load opens the GGUF file at path and builds its tokenizer.
func Load(path string) (*Tokenizer, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return FromGGUF(f)
}
