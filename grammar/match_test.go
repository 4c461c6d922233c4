package grammar

import (
	"fmt"
	"strings"
	"testing"
)

// TestMatchTables checks whole strings against grammars of each kind.
func TestMatchTables(t *testing.T) {
	v := byteVocab(t)
	cases := []struct {
		name, src string
		good, bad []string
	}{
		{"arithmetic", arithmeticGBNF,
			[]string{"1", "1+2", "1 + 2 * (3 - 4)", "-(-7)/2", "((1))"},
			[]string{"", "1+", "(1", "1 2", "a", "1 ++ 2", ")"}},
		{"json", jsonGBNF,
			[]string{`{}`, `[]`, `{"a": 1}`, `[1, -2.5e+3, "x\n", true, null]`, `{"a": {"b": [{}]}}`, `"\u00e9\ud83d"`, `"é😀"`, "0", "-0.5"},
			[]string{`{`, `{"a"}`, `[1,]`, `01`, `"\x"`, "\"a\nb\"", `tru`, `{"a":1,}`, `"\u12"`}},
		{"list", listGBNF,
			[]string{"- a\n", "- milk\n- eggs\n"},
			[]string{"", "- \n", "-a\n", "- a", "* a\n"}},
		{"c-like", cLikeGBNF,
			[]string{"int main() {return 0;}", "void f(int a, char* b) {\n  x = a + 1;\n  return;\n}\n"},
			[]string{"int main() {return 0}", "int 1x() {}", "main() {}"}},
		{"dot and classes", `root ::= . [^a-c] [x-z0-9]{2} "é"?`,
			[]string{"ddx1", "😀dz9é", "\n\n00"},
			[]string{"dax1", "ddxa", "ddx", "ddx1éé"}},
		{"nullable repetition", `root ::= ("a"?){0,100} "b"`,
			[]string{"b", "ab", strings.Repeat("a", 100) + "b"},
			[]string{"", "a", strings.Repeat("a", 101) + "b"}},
		{"ambiguous runs", "root ::= " + strings.Repeat("x ", 40) + "\nx ::= \"a\"* | \"a\"* \"a\"*",
			[]string{"", "a", strings.Repeat("a", 50)},
			[]string{"b", "ab"}},
		{"bounded repetition", `root ::= "a"{2,3} "b"{2} "c"{1,} "d"{0,1}`,
			[]string{"aabbc", "aaabbcccd"},
			[]string{"abbc", "aaaabbc", "aabc", "aabb", "aabbcdd"}},
		{"escapes", `root ::= "\x41\u00e9\U0001F600\t\"\\" [\[\]\-]`,
			[]string{"Aé😀\t\"\\[", "Aé😀\t\"\\-"},
			[]string{"Aé😀\t\"\\a"}},
		{"nullable and tail recursion", `root ::= a b
a ::= "x"* | "y"
b ::= ( "z" b ) | ""`,
			[]string{"", "xxx", "y", "zz", "xxzzz", "yz"},
			[]string{"yy", "zx", "xyz"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := mustEngine(t, c.src, v)
			for _, s := range c.good {
				if !matches(t, e, s) {
					t.Errorf("%q should match", s)
				}
			}
			for _, s := range c.bad {
				if matches(t, e, s) {
					t.Errorf("%q should not match", s)
				}
			}
		})
	}
}

// TestDeepRecursionConstantStack checks that a long repetition does not
// grow the automaton's stacks: the state after many items equals the
// state after one.
func TestDeepRecursionConstantStack(t *testing.T) {
	e := mustEngine(t, `root ::= "[" ("a" ",")* "]"`, byteVocab(t))
	m, _ := e.NewMatcher()
	if err := m.AcceptBytes([]byte("[a,")); err != nil {
		t.Fatal(err)
	}
	h1 := m.in.hashState(m.st)
	for range 1000 {
		if err := m.AcceptBytes([]byte("a,")); err != nil {
			t.Fatal(err)
		}
	}
	if h2 := m.in.hashState(m.st); h1 != h2 {
		t.Fatalf("state after 1001 items differs from the state after 1")
	}
}

// TestUTF8 checks that characters are matched as UTF-8: overlong forms,
// surrogates and stray bytes are refused even where any character may
// come, and characters split across tokens are matched whole.
func TestUTF8(t *testing.T) {
	e := mustEngine(t, `root ::= "e" [^a]* "!"`, byteVocab(t))
	cases := []struct {
		text string
		ok   bool
	}{
		{"e!", true},
		{"eé😀\u07ff!", true},
		{"\xe0\x81\xa5!", false},      // overlong "e"
		{"\xc1\xa5!", false},          // overlong "e" in two bytes
		{"e\xed\xa0\x80!", false},     // a surrogate
		{"e\xf4\x90\x80\x80!", false}, // beyond U+10FFFF
		{"e\x80!", false},             // a stray continuation byte
		{"e\xc3!", false},             // a cut character
		{"e\xc3\xa9\xe2\x82\xac!", true},
	}
	for _, c := range cases {
		if got := matches(t, e, c.text); got != c.ok {
			t.Errorf("%q: match %v, want %v", c.text, got, c.ok)
		}
	}
}

// TestConcurrentMatchers runs matchers of one engine side by side (run
// with -race to check the engine's locking), each to a complete match.
func TestConcurrentMatchers(t *testing.T) {
	e := mustEngine(t, jsonGBNF, byteVocab(t, `{"`, `": `, `true`, `null`))
	texts := []string{`{"a": [1, 2, {"b": null}]}`, `[true, "x", -0.5]`, `{"k": "v", "n": 12e3}`, `"plain"`}
	errs := make(chan error, len(texts))
	for _, text := range texts {
		go func() {
			m, err := e.NewMatcher()
			if err != nil {
				errs <- err
				return
			}
			mask := make([]uint64, e.Vocab().MaskWords())
			for i := range len(text) {
				if err := m.Allowed(mask); err != nil {
					errs <- err
					return
				}
				if mask[text[i]/64]>>(text[i]%64)&1 == 0 {
					errs <- fmt.Errorf("%q: byte %d masked out", text, i)
					return
				}
				if err := m.Accept(int32(text[i])); err != nil {
					errs <- err
					return
				}
			}
			if !m.CanEnd() {
				errs <- fmt.Errorf("%q: not a complete match", text)
				return
			}
			errs <- nil
		}()
	}
	for range texts {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestCompaction checks that a long sequence keeps its matcher's node
// table bounded and its state intact.
func TestCompaction(t *testing.T) {
	e := mustEngine(t, `root ::= "[" item ("," item)* "]"
item ::= "{" [a-z]{1,3} ":" [0-9]+ "}"`, byteVocab(t))
	m, _ := e.NewMatcher()
	mask := make([]uint64, e.Vocab().MaskWords())
	if err := m.AcceptBytes([]byte("[{a:1}")); err != nil {
		t.Fatal(err)
	}
	for i := range 20000 {
		if err := m.Allowed(mask); err != nil {
			t.Fatal(err)
		}
		if err := m.AcceptBytes([]byte(fmt.Sprintf(",{%c:%d}", 'a'+i%26, i))); err != nil {
			t.Fatal(err)
		}
		if m.CanEnd() {
			t.Fatal("complete inside the list")
		}
		m.compact() // as if the table had grown: the state must survive
	}
	if err := m.AcceptBytes([]byte("]")); err != nil || !m.CanEnd() {
		t.Fatalf("the list does not end: %v", err)
	}
	if n := len(m.in.nodes); n > compactNodes {
		t.Fatalf("%d nodes kept", n)
	}
}
