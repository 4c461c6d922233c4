package grammar

import (
	"sync"
	"testing"

	"llmserve/internal/shared"
	"llmserve/model/tokenizer"
)

// vocabs caches each real vocabulary once per test binary: loading the
// 128k one takes a while.
var vocabs sync.Map // file name -> *loadedVocab

type loadedVocab struct {
	once sync.Once
	tok  *tokenizer.Tokenizer
	v    *Vocab
	err  error
}

// realVocab loads ../shared/vocab/<name> as a tokenizer and its Vocab, or
// skips when the shared folder is absent.
func realVocab(t testing.TB, name string) (*tokenizer.Tokenizer, *Vocab) {
	t.Helper()
	path := shared.Path(t, "vocab/"+name)
	lv, _ := vocabs.LoadOrStore(name, &loadedVocab{})
	l := lv.(*loadedVocab)
	l.once.Do(func() {
		if l.tok, l.err = tokenizer.Load(path); l.err != nil {
			return
		}
		l.v, l.err = VocabOf(l.tok)
	})
	if l.err != nil {
		t.Fatalf("vocabulary %s: %v", name, l.err)
	}
	return l.tok, l.v
}

// byteVocab is a toy vocabulary: one token per byte value, then the
// given multi-byte tokens, then an end token.
func byteVocab(t testing.TB, extra ...string) *Vocab {
	t.Helper()
	toks := make([][]byte, 0, 256+len(extra)+1)
	for b := range 256 {
		toks = append(toks, []byte{byte(b)})
	}
	for _, s := range extra {
		toks = append(toks, []byte(s))
	}
	end := int32(len(toks))
	toks = append(toks, nil)
	v, err := NewVocab(len(toks), func(id int32) []byte { return toks[id] }, []int32{end})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// mustEngine compiles src for v.
func mustEngine(t testing.TB, src string, v *Vocab) *Engine {
	t.Helper()
	g, err := Parse(src)
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, src)
	}
	e, err := NewEngine(g, v)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// matches reports whether text is a complete match of e's grammar.
func matches(t testing.TB, e *Engine, text string) bool {
	t.Helper()
	m, err := e.NewMatcher()
	if err != nil {
		t.Fatal(err)
	}
	if m.AcceptBytes([]byte(text)) != nil {
		return false
	}
	return m.CanEnd()
}
