package synth

import (
	"reflect"
	"testing"

	"llmserve/model/chat"
	"llmserve/model/tokenizer"
)

// TestBuiltinVocabTokenizes checks that the project's tokenizer reads the
// built-in vocabulary as intended: every byte of valid UTF-8 text is one token,
// text round-trips, special-token text parses to the special ids, and the
// chat template renders a prompt that tokenizes to header and end-of-turn
// ids.
func TestBuiltinVocabTokenizes(t *testing.T) {
	v, err := BuiltinVocab()
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.FromGGUF(v)
	if err != nil {
		t.Fatal(err)
	}
	if tok.VocabSize() != 256+len(builtinSpecials) || tok.BOS() != 256 || tok.EOS() != 260 || !tok.IsEOG(260) {
		t.Errorf("vocab size %d, BOS %d, EOS %d (EOG %v); want %d, 256, 260 (true)",
			tok.VocabSize(), tok.BOS(), tok.EOS(), tok.IsEOG(260), 256+len(builtinSpecials))
	}
	for _, text := range []string{"Hello, world!", "  tabs\tand\nnewlines ", "héllo 世界 🙂", "\x00\x7f"} {
		ids, err := tok.Encode(text, false, false)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]int32, len(text))
		for i := range len(text) {
			want[i] = int32(text[i])
		}
		if !reflect.DeepEqual(ids, want) {
			t.Errorf("Encode(%q) = %v, want the bytes %v", text, ids, want)
		}
		if got := tok.Decode(ids); got != text {
			t.Errorf("Decode(Encode(%q)) = %q", text, got)
		}
	}

	tmpl, err := chat.New(tok.ChatTemplate())
	if err != nil {
		t.Fatal(err)
	}
	prompt, err := tmpl.Render([]chat.Message{{Role: "user", Content: "Hi"}},
		chat.Options{AddGenerationPrompt: true, BOSToken: "<|begin_of_text|>", EOSToken: "<|eot_id|>"})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := tok.Encode(prompt, false, true)
	if err != nil {
		t.Fatal(err)
	}
	b := func(s string) []int32 {
		out := make([]int32, len(s))
		for i := range len(s) {
			out[i] = int32(s[i])
		}
		return out
	}
	var want []int32
	want = append(want, 256, 258)
	want = append(want, b("user")...)
	want = append(want, 259)
	want = append(want, b("\n\nHi")...)
	want = append(want, 260, 258)
	want = append(want, b("assistant")...)
	want = append(want, 259)
	want = append(want, b("\n\n")...)
	if !reflect.DeepEqual(ids, want) {
		t.Errorf("chat prompt %q tokenizes to %v, want %v", prompt, ids, want)
	}
}
