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
	for _, file := range []string{"ggml-vocab-llama-bpe.gguf", "ggml-vocab-qwen2.gguf", "ggml-vocab-llama-spm.gguf"} {
		tok, v := realVocab(t, file)
		for _, d := range docs {
			t.Run(file+"/"+d.name, func(t *testing.T) {
				e := mustEngine(t, d.src, v)
				ids, err := tok.Encode(d.text, false, false)
				if err != nil {
					t.Fatal(err)
				}
				if tok.Decode(ids) != d.text {
					// SPM puts a space before the text: spell it with
					// the longest tokens instead.
					ids = greedyTokens(t, v, d.text)
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

// TestEndOnlyEndTokens checks that once the grammar is complete and
// nothing may follow, the mask holds exactly the end tokens, and that an
// end token is refused before then.
func TestEndOnlyEndTokens(t *testing.T) {
	tok, v := realVocab(t, "ggml-vocab-llama-bpe.gguf")
	e := mustEngine(t, JSONObjectGBNF, v)
	m, err := e.NewMatcher()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Accept(v.end[0]); err == nil {
		t.Fatal("an end token was accepted before the grammar is complete")
	}
	ids, err := tok.Encode(`{"a": [1, "x"]}`, false, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if err := m.Accept(id); err != nil {
			t.Fatal(err)
		}
	}
	if !m.Done() || !m.CanEnd() {
		t.Fatalf("Done %v CanEnd %v after a whole object", m.Done(), m.CanEnd())
	}
	mask := make([]uint64, v.MaskWords())
	if err := m.Allowed(mask); err != nil {
		t.Fatal(err)
	}
	want := make([]uint64, v.MaskWords())
	for _, id := range v.end {
		want[id>>6] |= 1 << (id & 63)
	}
	if diff := diffMask(v, mask, want); diff != "" {
		t.Fatalf("mask at the end: %s", diff)
	}
	if len(v.end) < 2 {
		t.Fatalf("llama-bpe has %d end tokens, want several (<|end_of_text|>, <|eot_id|>, ...)", len(v.end))
	}
	if err := m.Accept(v.end[1]); err != nil {
		t.Fatal(err)
	}
	if err := m.Accept(ids[0]); err == nil {
		t.Fatal("a token was accepted after the end")
	}
}

// greedyTokens spells text with the longest token at each position.
func greedyTokens(t *testing.T, v *Vocab, text string) []int32 {
	var ids []int32
	for rest := []byte(text); len(rest) > 0; {
		best, n := int32(-1), 0
		node := int32(0)
		for d := 0; d < len(rest); d++ {
			child := int32(-1)
			for c := node + 1; c < v.nodeEnd[node]; c = v.nodeEnd[c] {
				if v.nodeByte[c] == rest[d] {
					child = c
					break
				}
			}
			if child < 0 {
				break
			}
			node = child
			if v.nodeOwn[node] > 0 {
				best, n = v.toks[v.nodeTok[node]], d+1
			}
		}
		if best < 0 {
			t.Fatalf("no token spells %q", rest)
		}
		ids = append(ids, best)
		rest = rest[n:]
	}
	return ids
}
