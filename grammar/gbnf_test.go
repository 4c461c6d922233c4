package grammar

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestParseGood checks that valid grammars of every construct compile.
func TestParseGood(t *testing.T) {
	for _, src := range []string{
		arithmeticGBNF, jsonGBNF, listGBNF, cLikeGBNF, JSONObjectGBNF,
		`root ::= "a"`,
		"root ::= \"a\" # a comment\n# another\n",
		"root ::= (\n  \"a\" |\n  \"b\"\n)",
		"root ::= \"a\" |\n  \"b\"",
		"root ::= x\r\nx ::= [a-z]\r\n",
		`root ::= [^\n]* "\u00e9" [\x00-\x1F]`,
		`root ::= "x"{3} "y"{1,} "z"{0,2} w{ 1 , 2 }
w ::= "w"`,
		`root ::= ""`,
		`root ::= . .?`,
		`root ::= [-a] [a-] [\]]`,
		`root_rule ::= "a"`,
	} {
		g, err := Parse(src)
		if strings.Contains(src, "root_rule") {
			if _, err = ParseFrom(src, "root_rule"); err != nil {
				t.Errorf("%q: %v", src, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", src, err)
		} else if g.Rules() == 0 {
			t.Errorf("%q: no rules", src)
		}
	}
}

// TestParseBad checks that faulty grammars fail with their position.
func TestParseBad(t *testing.T) {
	cases := []struct {
		src       string
		line, col int
		msg       string
	}{
		{``, 1, 1, "empty"},
		{`root`, 1, 5, "::="},
		{`root ::= "abc`, 1, 10, "not closed"},
		{`root ::= [abc`, 1, 10, "not closed"},
		{"root ::= x\n", 1, 10, `"x" is used but not defined`},
		{"root ::= \"a\"\nroot ::= \"b\"", 2, 1, "defined twice"},
		{`root ::= ( "a"`, 1, 15, ") to close"},
		{`root ::= "a" )`, 1, 14, "end of the line"},
		{`root ::= "\q"`, 1, 11, "unknown escape"},
		{`root ::= "\x4"`, 1, 11, "hexadecimal"},
		{`root ::= [z-a]`, 1, 11, "empty"},
		{`root ::= "a"{3,2}`, 1, 13, "upper bound"},
		{`root ::= "a"{1`, 1, 15, "}"},
		{`root ::= "a"{100000}`, 1, 14, "bound above"},
		{"root ::= *", 1, 10, "unexpected"},
		{"root ::= \"\xff\"", 1, 11, "UTF-8"},
		{"root ::= \"a\"\nx ::= \"b\" ::=", 2, 11, "unexpected"},
	}
	for _, c := range cases {
		_, err := Parse(c.src)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("%q: error %v, want a *SyntaxError", c.src, err)
			continue
		}
		if se.Line != c.line || se.Column != c.col || !strings.Contains(se.Msg, c.msg) {
			t.Errorf("%q: got %v, want line %d column %d containing %q", c.src, err, c.line, c.col, c.msg)
		}
	}
}

// TestParseRefused checks the grammars refused for what they are rather
// than how they are written.
func TestParseRefused(t *testing.T) {
	cases := []struct{ src, msg string }{
		{`root ::= root "a" | "b"`, `"root" is left-recursive`},
		{"root ::= x\nx ::= y \"a\"\ny ::= \"\" | x", "left-recursive"},
		{"root ::= x* root\nx ::= \"a\"", "left-recursive"},
		{"root ::= (\"a\"? root)", "left-recursive"},
		{`x ::= "a"`, `no rule "root"`},
	}
	for _, c := range cases {
		_, err := Parse(c.src)
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%q: got %v, want an error containing %q", c.src, err, c.msg)
		}
	}
}

// TestHostileGrammars checks that grammars built to explode fail with a
// clear error, at compile time or at the step that outgrows the bounds,
// instead of hanging or exhausting memory.
func TestHostileGrammars(t *testing.T) {
	v := byteVocab(t)
	// Each level doubles the distinct stacks: 2^40 of them at the start.
	var b strings.Builder
	b.WriteString("root ::= r0\n")
	for i := range 40 {
		fmt.Fprintf(&b, "r%d ::= r%d | r%d \"b\"\n", i, i+1, i+1)
	}
	b.WriteString("r40 ::= \"a\"*\n")
	cases := []struct{ name, src string }{
		{"doubling", b.String()},
		{"huge repetition", "root ::= " + strings.Repeat(`"a"{0,9999} `, 200)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := runHostile(v, c.src)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), "grammar") {
				t.Fatalf("error %q does not say what failed", err)
			}
			t.Log(err)
		})
	}
}

// runHostile compiles src and feeds it "a" with a mask at each step until
// something fails.
func runHostile(v *Vocab, src string) error {
	g, err := Parse(src)
	if err != nil {
		return err
	}
	e, err := NewEngine(g, v)
	if err != nil {
		return err
	}
	m, err := e.NewMatcher()
	if err != nil {
		return err
	}
	mask := make([]uint64, v.MaskWords())
	for range 200 {
		if err := m.Allowed(mask); err != nil {
			return err
		}
		if err := m.AcceptBytes([]byte("a")); err != nil {
			return err
		}
	}
	return nil
}

// FuzzParseGBNF checks that any text either compiles or fails with an
// error, and that a compiled grammar starts a matcher.
func FuzzParseGBNF(f *testing.F) {
	for _, s := range []string{arithmeticGBNF, jsonGBNF, listGBNF, cLikeGBNF, `root ::= [^a-z]{2,5} "\u00e9"`, `root ::= (("a")*)+`} {
		f.Add(s)
	}
	v := byteVocab(f)
	f.Fuzz(func(t *testing.T, src string) {
		g, err := Parse(src)
		if err != nil {
			return
		}
		e, err := NewEngine(g, v)
		if err != nil {
			return
		}
		m, err := e.NewMatcher()
		if err != nil {
			return
		}
		mask := make([]uint64, v.MaskWords())
		_ = m.Allowed(mask)
		_ = m.AcceptBytes([]byte("a"))
	})
}
