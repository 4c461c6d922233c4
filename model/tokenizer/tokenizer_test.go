package tokenizer

import (
	"slices"
	"strings"
	"testing"
)

// spmVocab is a small SentencePiece vocabulary with byte fallback for two
// bytes.
func spmVocab(t *testing.T) *Tokenizer {
	t.Helper()
	tokens := []string{"<unk>", "<s>", "</s>", "▁", "a", "b", "c", "ab", "▁ab", "bc", "<0xC3>", "<0xA9>", "<0xE2>", "<0x82>", "<0xAC>"}
	scores := []float32{0, 0, 0, -5, -1, -1, -1, -2, -3, -1.5, 0, 0, 0, 0, 0}
	types := []TokenType{TypeUnknown, TypeControl, TypeControl, TypeNormal, TypeNormal, TypeNormal, TypeNormal,
		TypeNormal, TypeNormal, TypeNormal, TypeByte, TypeByte, TypeByte, TypeByte, TypeByte}
	tok, err := New(&Vocab{Model: ModelSPM, Tokens: tokens, Scores: scores, Types: types,
		BOS: 1, EOS: 2, UNK: 0, PAD: NoToken, EOT: NoToken, EOM: NoToken, AddBOS: true, AddSpacePrefix: true})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestSPMEncode(t *testing.T) {
	tok := spmVocab(t)
	tests := []struct {
		text                     string
		addSpecial, parseSpecial bool
		want                     []int32
	}{
		{"ab c", false, false, []int32{8, 3, 6}},         // ▁ab ▁ c
		{"abc", false, false, []int32{3, 4, 9}},          // "bc" scores higher than "ab": merged first
		{"é", false, false, []int32{3, 10, 11}},          // byte fallback
		{"ab", true, false, []int32{1, 8}},               // BOS
		{"</s>ab", false, true, []int32{2, 8}},           // control token, then a space prefix again
		{"", true, false, []int32{1}},                    // empty text
		{"x", false, false, []int32{3, 0}},               // no token, no byte token: unknown
		{"ab</s>", false, false, []int32{8, 0, 0, 0, 0}}, // special text stays text
	}
	for _, tc := range tests {
		got, err := tok.Encode(tc.text, tc.addSpecial, tc.parseSpecial)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Encode(%q, %v, %v) = %v, want %v", tc.text, tc.addSpecial, tc.parseSpecial, got, tc.want)
		}
	}
}

// bpeVocab is a small byte-level BPE vocabulary ("Ġ" is the space byte).
func bpeVocab(t *testing.T, pre string) *Tokenizer {
	t.Helper()
	tokens := []string{"a", "b", "c", "Ġ", "ab", "bc", "Ġa", "<|end|>", "<tag>"}
	types := []TokenType{1, 1, 1, 1, 1, 1, 1, TypeControl, TypeUserDefined}
	merges := []string{"b c", "a b", "Ġ a", "Ġa bc"}
	tok, err := New(&Vocab{Model: ModelBPE, Pre: pre, Tokens: tokens, Types: types, Merges: merges,
		BOS: NoToken, EOS: 7, UNK: NoToken, PAD: NoToken, EOT: NoToken, EOM: NoToken})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestBPEEncode(t *testing.T) {
	tok := bpeVocab(t, "gpt-2")
	tests := []struct {
		text         string
		parseSpecial bool
		want         []int32
	}{
		{"abc", false, []int32{0, 5}},        // "b c" ranks before "a b"
		{"ab", false, []int32{4}},            // a b
		{" abc", false, []int32{0, 1, 2}},    // "Ġa bc" merges to "Ġabc", no token: its one-byte tokens remain, as in llama.cpp
		{"a<tag>b", false, []int32{0, 8, 1}}, // user-defined tokens are split out even without parseSpecial
		{"a<|end|>", true, []int32{0, 7}},    // control token with parseSpecial
		{"xa", false, []int32{0}},            // no token for "x" nor its byte: dropped, like llama.cpp
		{"", false, nil},
	}
	for _, tc := range tests {
		got, err := tok.Encode(tc.text, true, tc.parseSpecial)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Encode(%q, parseSpecial=%v) = %v, want %v", tc.text, tc.parseSpecial, got, tc.want)
		}
	}
}

func TestUnknownPreTokenizer(t *testing.T) {
	_, err := New(&Vocab{Model: ModelBPE, Pre: "no-such-pre", Tokens: []string{"a"},
		BOS: NoToken, EOS: NoToken, UNK: NoToken, PAD: NoToken, EOT: NoToken, EOM: NoToken})
	if err == nil || !strings.Contains(err.Error(), `"no-such-pre"`) {
		t.Fatalf("New with an unknown pre-tokenizer: err = %v, want one naming it", err)
	}
}

func TestUnknownModel(t *testing.T) {
	_, err := New(&Vocab{Model: "bert", Tokens: []string{"a"},
		BOS: NoToken, EOS: NoToken, UNK: NoToken, PAD: NoToken, EOT: NoToken, EOM: NoToken})
	if err == nil || !strings.Contains(err.Error(), `"bert"`) {
		t.Fatalf("New with model bert: err = %v, want one naming it", err)
	}
}

func TestStreamDecoderSplitCharacters(t *testing.T) {
	tok := spmVocab(t)
	const c3, a9, e2, x82, xac = 10, 11, 12, 13, 14
	tests := []struct {
		name  string
		ids   []int32
		adds  []string // what each Add returns
		flush string
	}{
		{"two-byte character", []int32{c3, a9}, []string{"", "é"}, ""},
		{"three-byte character", []int32{e2, x82, xac}, []string{"", "", "€"}, ""},
		{"text then split character", []int32{8, c3, a9, 4}, []string{" ab", "", "é", "a"}, ""},
		{"control token inside a character", []int32{c3, 2, a9}, []string{"", "", "é"}, ""},
		{"incomplete at the end", []int32{4, e2, x82}, []string{"a", "", ""}, "\xe2\x82"},
		{"broken sequence is passed on", []int32{c3, 4}, []string{"", "\xc3a"}, ""},
		{"stray continuation byte", []int32{a9}, []string{"\xa9"}, ""},
		{"bos and eos render as nothing", []int32{1, 4, 2}, []string{"", "a", ""}, ""},
	}
	for _, tc := range tests {
		d := tok.NewStreamDecoder()
		for i, id := range tc.ids {
			if got := d.Add(id); got != tc.adds[i] {
				t.Errorf("%s: Add #%d (%d) = %q, want %q", tc.name, i, id, got, tc.adds[i])
			}
		}
		if got := d.Flush(); got != tc.flush {
			t.Errorf("%s: Flush = %q, want %q", tc.name, got, tc.flush)
		}
		if got := d.Flush(); got != "" {
			t.Errorf("%s: second Flush = %q, want nothing", tc.name, got)
		}
	}
}

func TestTokenBytes(t *testing.T) {
	spm := spmVocab(t)
	bpe := bpeVocab(t, "gpt-2")
	tests := []struct {
		tok  *Tokenizer
		id   int32
		want string
	}{
		{spm, 8, " ab"},   // ▁ is a space
		{spm, 10, "\xc3"}, // <0xC3>
		{spm, 2, "</s>"},  // control tokens give their text
		{bpe, 6, " a"},    // Ġ is the space byte
		{bpe, 8, "<tag>"}, // user-defined
		{spm, 99, ""},     // outside the vocabulary
	}
	for _, tc := range tests {
		if got := string(tc.tok.TokenBytes(tc.id)); got != tc.want {
			t.Errorf("TokenBytes(%d) = %q, want %q", tc.id, got, tc.want)
		}
	}
}

func TestPreTokenizers(t *testing.T) {
	tests := []struct {
		pre, text string
		want      []string
	}{
		{"gpt-2", "Hello world's  123 !!", []string{"Hello", " world", "'s", " ", " 123", " !!"}},
		{"llama-bpe", "12345 abc\n\n  x", []string{"123", "45", " abc", "\n\n", " ", " x"}},
		{"llama-bpe", "I'M here", []string{"I", "'M", " here"}},
		{"qwen2", "12345 abc", []string{"1", "2", "3", "4", "5", " abc"}},
		{"qwen2", "a.\n\n b", []string{"a", ".\n\n", " b"}},
		{"starcoder", "x 123", []string{"x", " ", "1", "2", "3"}},
		{"falcon", "a,b 1234", []string{"a", ",", "b", " ", "123", "4"}},
		{"deepseek-coder", "ab12 , 中文", []string{"ab", "1", "2", " ,", " ", "中文"}},
		{"gpt-4o", "HELLOworld Hello's ABC def 12345", []string{"HELLOworld", " Hello's", " ABC", " def", " ", "123", "45"}},
		{"gpt-4o", "ÉCOLEétéX", []string{"ÉCOLEété", "X"}},
		{"tekken", "isn't 42", []string{"isn", "'t", " ", "4", "2"}},
		{"deepseek-llm", "中  ", []string{"中", "  "}},
		{"deepseek-llm", "Hi 中文 42\n", []string{"Hi", " ", "中文", " ", "42", "\n"}},
	}
	for _, tc := range tests {
		pt, err := lookupPreTokenizer(tc.pre)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, w := range pt.split([]rune(tc.text)) {
			got = append(got, string(w))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s %q: split %q, want %q", tc.pre, tc.text, got, tc.want)
		}
	}
}
