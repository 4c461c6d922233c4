package tokenizer

import "fmt"

// TokenType is the per-token type stored in tokenizer.ggml.token_type.
type TokenType int32

// Token types, numbered as in GGUF (llama.cpp's llama_token_type).
const (
	TypeUndefined   TokenType = 0
	TypeNormal      TokenType = 1
	TypeUnknown     TokenType = 2
	TypeControl     TokenType = 3
	TypeUserDefined TokenType = 4
	TypeUnused      TokenType = 5
	TypeByte        TokenType = 6
)

// Model names of tokenizer.ggml.model.
const (
	ModelSPM = "llama" // SentencePiece BPE: merges chosen by token score
	ModelBPE = "gpt2"  // byte-level BPE: merges chosen by merge rank
)

// NoToken marks a special token id that the vocabulary does not have.
const NoToken int32 = -1

// Vocab is everything a tokenizer is built from. VocabFromMetadata fills it
// from GGUF metadata, applying llama.cpp's defaults; tests may build one by
// hand.
type Vocab struct {
	Model  string      // ModelSPM or ModelBPE
	Pre    string      // pre-tokenizer name (BPE only); "" selects "default"
	Tokens []string    // [n] token texts; index is the id
	Scores []float32   // [n] or nil: merge priority of SPM tokens
	Types  []TokenType // [n] or nil: all TypeNormal when nil
	Merges []string    // BPE merges "left right", highest priority first

	BOS, EOS, UNK, PAD, EOT, EOM int32 // special ids, NoToken when absent

	AddBOS, AddEOS bool // Encode with addSpecial adds BOS first / EOS last
	AddSpacePrefix bool // SPM: a space is put before text that starts a fragment

	ChatTemplate string // tokenizer.chat_template, or ""
}

// validate checks that the parts of v agree with each other.
func (v *Vocab) validate() error {
	n := len(v.Tokens)
	if n == 0 {
		return fmt.Errorf("tokenizer: empty vocabulary")
	}
	if v.Scores != nil && len(v.Scores) < n {
		return fmt.Errorf("tokenizer: %d scores for %d tokens", len(v.Scores), n)
	}
	if v.Types != nil && len(v.Types) < n {
		return fmt.Errorf("tokenizer: %d token types for %d tokens", len(v.Types), n)
	}
	for _, s := range []struct {
		name string
		id   int32
	}{{"bos", v.BOS}, {"eos", v.EOS}, {"unknown", v.UNK}, {"padding", v.PAD}, {"eot", v.EOT}, {"eom", v.EOM}} {
		if s.id != NoToken && (s.id < 0 || int(s.id) >= n) {
			return fmt.Errorf("tokenizer: %s token id %d outside vocabulary of %d", s.name, s.id, n)
		}
	}
	if v.AddBOS && v.BOS == NoToken {
		return fmt.Errorf("tokenizer: add_bos_token is set but there is no bos token")
	}
	if v.AddEOS && v.EOS == NoToken {
		return fmt.Errorf("tokenizer: add_eos_token is set but there is no eos token")
	}
	return nil
}
