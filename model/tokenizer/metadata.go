package tokenizer

import (
	"fmt"
	"slices"
)

// Metadata is the part of a GGUF file's key-value metadata that vocabularies
// are read from (*gguf.File satisfies it).
type Metadata interface {
	Has(key string) bool
	String(key string) (string, error)
	Uint32(key string) (uint32, error)
	Bool(key string) (bool, error)
	Strings(key string) ([]string, error)
	Float32s(key string) ([]float32, error)
	Int32s(key string) ([]int32, error)
}

// GGUF metadata keys of the tokenizer.
const (
	keyModel          = "tokenizer.ggml.model"
	keyPre            = "tokenizer.ggml.pre"
	keyTokens         = "tokenizer.ggml.tokens"
	keyScores         = "tokenizer.ggml.scores"
	keyTokenType      = "tokenizer.ggml.token_type"
	keyMerges         = "tokenizer.ggml.merges"
	keyBOS            = "tokenizer.ggml.bos_token_id"
	keyEOS            = "tokenizer.ggml.eos_token_id"
	keyUNK            = "tokenizer.ggml.unknown_token_id"
	keyPAD            = "tokenizer.ggml.padding_token_id"
	keyEOT            = "tokenizer.ggml.eot_token_id"
	keyEOM            = "tokenizer.ggml.eom_token_id"
	keyAddBOS         = "tokenizer.ggml.add_bos_token"
	keyAddEOS         = "tokenizer.ggml.add_eos_token"
	keyAddSpacePrefix = "tokenizer.ggml.add_space_prefix"
	keyChatTemplate   = "tokenizer.chat_template"
)

// VocabFromMetadata reads a vocabulary from GGUF metadata. Where a key is
// absent it applies llama.cpp's defaults: SPM vocabularies have BOS 1, EOS 2,
// unknown 0, add BOS and a space prefix; BPE vocabularies have BOS = EOS = 11
// and add BOS only for the Llama-3 family of pre-tokenizers. Default ids that
// fall outside the vocabulary are dropped.
func VocabFromMetadata(m Metadata) (*Vocab, error) {
	v := &Vocab{BOS: NoToken, EOS: NoToken, UNK: NoToken, PAD: NoToken, EOT: NoToken, EOM: NoToken}
	var err error
	if v.Model, err = m.String(keyModel); err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", keyModel, err)
	}
	if m.Has(keyPre) {
		if v.Pre, err = m.String(keyPre); err != nil {
			return nil, fmt.Errorf("tokenizer: %s: %w", keyPre, err)
		}
	}
	switch v.Model {
	case ModelSPM:
		v.BOS, v.EOS, v.UNK = 1, 2, 0
		v.AddBOS, v.AddSpacePrefix = true, true
	case ModelBPE:
		v.BOS, v.EOS = 11, 11
		pt, err := lookupPreTokenizer(v.Pre)
		if err != nil {
			return nil, err
		}
		v.AddBOS = pt.addBOS
		if v.Merges, err = m.Strings(keyMerges); err != nil {
			return nil, fmt.Errorf("tokenizer: %s: %w", keyMerges, err)
		}
	default:
		return nil, fmt.Errorf("tokenizer: unsupported tokenizer model %q", v.Model)
	}

	if v.Tokens, err = m.Strings(keyTokens); err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", keyTokens, err)
	}
	if slices.Contains(v.Tokens, "") {
		// The metadata's slice may be shared: name empty tokens in a copy.
		v.Tokens = slices.Clone(v.Tokens)
		for i, t := range v.Tokens {
			if t == "" {
				v.Tokens[i] = fmt.Sprintf("[EMPTY_%d]", i)
			}
		}
	}
	if m.Has(keyScores) {
		if v.Scores, err = m.Float32s(keyScores); err != nil {
			ints, ierr := m.Int32s(keyScores)
			if ierr != nil {
				return nil, fmt.Errorf("tokenizer: %s: %w", keyScores, err)
			}
			v.Scores = make([]float32, len(ints))
			for i, s := range ints {
				v.Scores[i] = float32(s)
			}
		}
	}
	if m.Has(keyTokenType) {
		types, err := m.Int32s(keyTokenType)
		if err != nil {
			return nil, fmt.Errorf("tokenizer: %s: %w", keyTokenType, err)
		}
		v.Types = make([]TokenType, len(types))
		for i, t := range types {
			v.Types[i] = TokenType(t)
		}
	}

	n := int32(len(v.Tokens))
	for _, s := range []struct {
		key string
		id  *int32
	}{{keyBOS, &v.BOS}, {keyEOS, &v.EOS}, {keyUNK, &v.UNK}, {keyPAD, &v.PAD}, {keyEOT, &v.EOT}, {keyEOM, &v.EOM}} {
		if *s.id >= n {
			*s.id = NoToken
		}
		if !m.Has(s.key) {
			continue
		}
		id, err := m.Uint32(s.key)
		if err != nil {
			return nil, fmt.Errorf("tokenizer: %s: %w", s.key, err)
		}
		if id < uint32(n) {
			*s.id = int32(id)
		}
	}
	for _, b := range []struct {
		key string
		val *bool
	}{{keyAddBOS, &v.AddBOS}, {keyAddEOS, &v.AddEOS}, {keyAddSpacePrefix, &v.AddSpacePrefix}} {
		if !m.Has(b.key) {
			continue
		}
		if *b.val, err = m.Bool(b.key); err != nil {
			return nil, fmt.Errorf("tokenizer: %s: %w", b.key, err)
		}
	}
	if m.Has(keyChatTemplate) {
		if v.ChatTemplate, err = m.String(keyChatTemplate); err != nil {
			return nil, fmt.Errorf("tokenizer: %s: %w", keyChatTemplate, err)
		}
	}
	return v, nil
}
