package tokenizer

import (
	"fmt"
	"slices"
)

// Tokenizer encodes text to token ids and decodes ids to text. It is
// immutable after New and safe for concurrent use.
type Tokenizer struct {
	vocab   Vocab
	types   []TokenType         // [n] token types after the corrections New makes
	ids     map[string]int32    // token text -> id
	ranks   map[mergePair]int32 // BPE merge -> rank; nil for SPM
	pre     preTokenizer        // BPE pre-tokenizer
	special []int32             // control, user-defined and unknown ids, longest text first
	eog     map[int32]bool      // ids that end generation
	pieces  [][]byte            // [n] bytes each token stands for
	byteTok [256]int32          // SPM byte-fallback token of each byte
}

// eotTexts are texts of end-of-turn tokens that llama.cpp recognizes when
// the metadata names no eot token.
var eotTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
	"<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>"}

// eogTexts are texts of tokens that end generation, as llama.cpp lists them.
var eogTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>",
	"<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]",
	"[EOS]", "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
	"<｜end▁of▁sentence｜>", "[e~["}

// New builds a tokenizer over v, keeping its slices (they must not change
// afterwards). Like llama.cpp it finds the eot and eom tokens by their text
// when v does not name them, and marks every end-of-generation token as a
// control token.
func New(v *Vocab) (*Tokenizer, error) {
	if err := v.validate(); err != nil {
		return nil, err
	}
	t := &Tokenizer{vocab: *v}
	n := len(v.Tokens)
	t.ids = make(map[string]int32, n)
	for i, s := range v.Tokens {
		if j, dup := t.ids[s]; dup {
			return nil, fmt.Errorf("tokenizer: duplicate token %q has ids %d and %d", s, j, i)
		}
		t.ids[s] = int32(i)
	}
	t.types = make([]TokenType, n)
	for i := range t.types {
		t.types[i] = TypeNormal
		if v.Types != nil {
			t.types[i] = v.Types[i]
		}
	}

	switch v.Model {
	case ModelSPM:
		for b := 0; b < 256; b++ {
			t.byteTok[b] = t.findByteToken(byte(b))
		}
	case ModelBPE:
		pt, err := lookupPreTokenizer(v.Pre)
		if err != nil {
			return nil, err
		}
		t.pre = pt
		t.ranks = parseMerges(v.Merges)
	default:
		return nil, fmt.Errorf("tokenizer: unsupported tokenizer model %q", v.Model)
	}

	t.findEOG()
	for id, ty := range t.types {
		if ty == TypeControl || ty == TypeUserDefined || ty == TypeUnknown {
			t.special = append(t.special, int32(id))
		}
	}
	slices.SortStableFunc(t.special, func(a, b int32) int { return len(v.Tokens[b]) - len(v.Tokens[a]) })

	t.pieces = make([][]byte, n)
	for id := range t.pieces {
		t.pieces[id] = t.piece(int32(id))
	}
	return t, nil
}

// findEOG fills t.eog and completes the eot and eom ids from token texts.
func (t *Tokenizer) findEOG() {
	control := func(id int32) { t.types[id] = TypeControl }
	if t.vocab.EOT == NoToken {
		for _, s := range eotTexts {
			if id, ok := t.ids[s]; ok {
				t.vocab.EOT = id
				break
			}
		}
	}
	if t.vocab.EOM == NoToken {
		if id, ok := t.ids["<|eom_id|>"]; ok {
			t.vocab.EOM = id
		}
	}
	for _, id := range []int32{t.vocab.EOT, t.vocab.EOM} {
		if id != NoToken {
			control(id)
		}
	}
	t.eog = map[int32]bool{}
	for _, s := range eogTexts {
		if id, ok := t.ids[s]; ok {
			t.eog[id] = true
			control(id)
		}
	}
	for _, id := range []int32{t.vocab.EOS, t.vocab.EOT, t.vocab.EOM} {
		if id != NoToken {
			t.eog[id] = true
		}
	}
}

// findByteToken returns the SPM token of byte b: <0xXX>, else the byte
// itself as text, else the unknown token.
func (t *Tokenizer) findByteToken(b byte) int32 {
	if id, ok := t.ids[fmt.Sprintf("<0x%02X>", b)]; ok {
		return id
	}
	if id, ok := t.ids[string([]byte{b})]; ok {
		return id
	}
	return t.vocab.UNK
}

func (t *Tokenizer) byteToken(b byte) int32 { return t.byteTok[b] }

func (t *Tokenizer) score(id int32) float32 {
	if t.vocab.Scores == nil {
		return 0
	}
	return t.vocab.Scores[id]
}

// Encode returns the token ids of text. With addSpecial it adds BOS (and
// EOS) as the vocabulary asks. User-defined tokens are always taken whole
// from the text; with parseSpecial so are control tokens (<|eot_id|>, <s>,
// ...), otherwise their text is tokenized like any other.
func (t *Tokenizer) Encode(text string, addSpecial, parseSpecial bool) ([]int32, error) {
	out := make([]int32, 0, len(text)/3+2)
	if addSpecial && t.vocab.AddBOS {
		out = append(out, t.vocab.BOS)
	}
	frags := t.partition(text, parseSpecial)
	switch t.vocab.Model {
	case ModelSPM:
		prevSpecial := true // the text's start counts as following a special token
		for _, f := range frags {
			if f.special {
				out = append(out, f.id)
				prevSpecial = true
				continue
			}
			s := f.text
			if t.vocab.AddSpacePrefix && prevSpecial {
				s = " " + s
			}
			out = t.encodeSPM(escapeSpaces(s), out)
			prevSpecial = false
		}
	case ModelBPE:
		for _, f := range frags {
			if f.special {
				out = append(out, f.id)
				continue
			}
			out = t.encodeBPE(f.text, out)
		}
	}
	if addSpecial && t.vocab.AddEOS {
		out = append(out, t.vocab.EOS)
	}
	return out, nil
}

// TokenText returns the vocabulary string of id as stored, or "" for an id
// outside the vocabulary.
func (t *Tokenizer) TokenText(id int32) string {
	if !t.valid(id) {
		return ""
	}
	return t.vocab.Tokens[id]
}

// TokenType returns the type of id (after New's corrections).
func (t *Tokenizer) TokenType(id int32) TokenType {
	if !t.valid(id) {
		return TypeUndefined
	}
	return t.types[id]
}

// TokenID returns the id of the token whose text is exactly s.
func (t *Tokenizer) TokenID(s string) (int32, bool) {
	id, ok := t.ids[s]
	return id, ok
}

func (t *Tokenizer) valid(id int32) bool { return id >= 0 && int(id) < len(t.vocab.Tokens) }

// BOS returns the beginning-of-sequence id, or NoToken.
func (t *Tokenizer) BOS() int32 { return t.vocab.BOS }

// EOS returns the end-of-sequence id, or NoToken.
func (t *Tokenizer) EOS() int32 { return t.vocab.EOS }

// EOT returns the end-of-turn id, or NoToken.
func (t *Tokenizer) EOT() int32 { return t.vocab.EOT }

// IsEOG reports whether id ends generation (EOS, EOT, EOM and tokens such as
// <|im_end|> or <|endoftext|>).
func (t *Tokenizer) IsEOG(id int32) bool { return t.eog[id] }

// AddBOS reports whether the vocabulary asks for BOS at the start of a prompt.
func (t *Tokenizer) AddBOS() bool { return t.vocab.AddBOS }

// VocabSize returns the number of tokens.
func (t *Tokenizer) VocabSize() int { return len(t.vocab.Tokens) }

// Model returns the tokenizer model (ModelSPM or ModelBPE).
func (t *Tokenizer) Model() string { return t.vocab.Model }

// ChatTemplate returns tokenizer.chat_template, or "".
func (t *Tokenizer) ChatTemplate() string { return t.vocab.ChatTemplate }
