package grammar

import (
	"fmt"
	"testing"
)

// bruteMask computes the mask of m's state the slow way: for each token,
// a fresh copy of the state takes the token's bytes.
func bruteMask(t testing.TB, m *Matcher) []uint64 {
	t.Helper()
	v := m.e.v
	mask := make([]uint64, v.words)
	c := m.Clone() // feeding interns nodes: leave m's interner as it was
	for id := range int32(v.n) {
		ok := false
		switch {
		case v.isEnd(id):
			ok = c.st.accepting()
		case v.bytes[id] != nil:
			st, err := c.in.feed(c.st, v.bytes[id])
			if err != nil {
				t.Fatal(err)
			}
			ok = len(st.stacks) > 0
		}
		if ok {
			mask[id>>6] |= 1 << (id & 63)
		}
	}
	return mask
}

// diffMask describes how got and want differ, naming a few tokens.
func diffMask(v *Vocab, got, want []uint64) string {
	s, n := "", 0
	for id := range v.n {
		g, w := got[id>>6]>>(id&63)&1, want[id>>6]>>(id&63)&1
		if g != w {
			if n < 8 {
				s += fmt.Sprintf(" token %d %q: got %d want %d;", id, v.bytes[id], g, w)
			}
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d tokens differ:%s", n, s)
}

// TestMasksMatchBruteForce walks documents through grammars on the real
// vocabularies and compares every step's mask with the brute-force one.
func TestMasksMatchBruteForce(t *testing.T) {
	schema, schemaDoc := benchSchema()
	schemaSrc, err := SchemaGBNF([]byte(schema), SchemaOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	docs := []struct {
		name, src, text string
		every           int // compare with brute force every this many steps
	}{
		{"schema", schemaSrc, schemaDoc, 5},
		{"json", jsonGBNF, "{\"name\": \"Zoë 😀\", \"tags\": [1, -2.5e3, true, null],\n \"x\": {\"\\u00e9\": []}}", 1},
		{"arithmetic", arithmeticGBNF, "12 * (3 + -4) / 5", 1},
		{"list", listGBNF, "- milk\n- 🥚 eggs\n", 1},
	}
	for _, file := range []string{"ggml-vocab-llama-bpe.gguf", "ggml-vocab-qwen2.gguf"} {
		tok, v := realVocab(t, file)
		for _, d := range docs {
			t.Run(file+"/"+d.name, func(t *testing.T) {
				e := mustEngine(t, d.src, v)
				ids, err := tok.Encode(d.text, false, false)
				if err != nil {
					t.Fatal(err)
				}
				m, err := e.NewMatcher()
				if err != nil {
					t.Fatal(err)
				}
				mask := make([]uint64, v.words)
				for step := 0; ; step++ {
					if err := m.Allowed(mask); err != nil {
						t.Fatalf("step %d: %v", step, err)
					}
					if step%d.every != 0 && step != len(ids) {
						// Only check that the document's token is allowed.
					} else if diff := diffMask(v, mask, bruteMask(t, m)); diff != "" {
						t.Fatalf("step %d (after %q): %s", step, tok.Decode(ids[:step]), diff)
					}
					if step == len(ids) {
						break
					}
					if mask[ids[step]>>6]>>(ids[step]&63)&1 == 0 {
						t.Fatalf("step %d: token %d %q of the document is masked out", step, ids[step], v.bytes[ids[step]])
					}
					if err := m.Accept(ids[step]); err != nil {
						t.Fatalf("step %d: %v", step, err)
					}
				}
				if !m.CanEnd() {
					t.Fatalf("the document is not a complete match")
				}
			})
		}
	}
}
