package httpapi

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// trickyStrings are strings whose JSON escaping has special cases.
var trickyStrings = []string{
	"",
	"plain text",
	`say "hi"`,
	`back\slash \\ and \"`,
	"\x00\x01\x07\x08\x09\x0a\x0b\x0c\x0d\x1b\x1f\x20\x7f",
	"line\nbreak\r\n\ttab",
	"<script>alert('x')</script> & more",
	"\u2028line sep\u2029para sep",
	"invalid \xff\xfe utf-8 \xc3",
	"truncated rune \xe2\x82",
	"surrogate half \xed\xa0\x80",
	"overlong \xc0\xaf",
	"héllo wörld 日本語 🎉",
	"\ufffd already a replacement",
	"mixed \x00<\u2028>\xff\"\\",
}

// TestAppendJSONString checks the hand-written string escaping against
// encoding/json, on tricky strings and on random bytes.
func TestAppendJSONString(t *testing.T) {
	cases := append([]string(nil), trickyStrings...)
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ab\"\\<>&\x00\x1f\n\x7f\xc3\xa9\xe2\x80\xa8\xa9\xff\xf0\x9f")
	for range 2000 {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Errorf("%q: got %s, encoding/json writes %s", s, got, want)
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range trickyStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Errorf("%q: got %s, encoding/json writes %s", s, got, want)
		}
	})
}

// TestChunksMatchEncodingJSON checks that the hand-written stream chunks
// are byte for byte what encoding/json writes for the response structs.
func TestChunksMatchEncodingJSON(t *testing.T) {
	for _, s := range trickyStrings {
		for _, finish := range []*string{nil, strptr("stop"), strptr("length")} {
			for _, index := range []int{0, 7} {
				id, model := "cmpl-"+s, "model "+s
				want, _ := json.Marshal(completionResponse{ID: id, Object: "text_completion", Created: 1700000000, Model: model,
					Choices: []completionChoice{{Text: s, Index: index, FinishReason: finish}}})
				c := &textChunk{head: chunkHead(id, "text_completion", 1700000000, model), text: s, index: index, finish: finish}
				if got := c.appendJSON(nil); string(got) != string(want) {
					t.Errorf("completion chunk of %q:\n got %s\nwant %s", s, got, want)
				}
			}
			delta := &chatMessage{}
			if s != "" {
				delta.Content = strptr(s)
			}
			want, _ := json.Marshal(chatResponse{ID: "chatcmpl-" + s, Object: "chat.completion.chunk", Created: -3, Model: s,
				Choices: []chatChoice{{Delta: delta, FinishReason: finish}}})
			c := &deltaChunk{head: chunkHead("chatcmpl-"+s, "chat.completion.chunk", -3, s), content: s, finish: finish}
			if got := c.appendJSON(nil); string(got) != string(want) {
				t.Errorf("chat chunk of %q:\n got %s\nwant %s", s, got, want)
			}
		}
	}
}
