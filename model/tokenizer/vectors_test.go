package tokenizer

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"llmserve/internal/shared"
)

// vocabFiles are the vocabularies with llama.cpp test vectors in shared/vocab.
var vocabFiles = []string{
	"ggml-vocab-llama-spm.gguf",
	"ggml-vocab-llama-bpe.gguf",
	"ggml-vocab-qwen2.gguf",
	"ggml-vocab-gpt-2.gguf",
	"ggml-vocab-falcon.gguf",
}

// vector is one test string and the ids llama.cpp expects for it.
type vector struct {
	text string
	ids  []int32
}

// readVectors reads X.inp (strings, each followed by the line
// __ggml_vocab_test__) and X.out (one line of ids per string).
func readVectors(t *testing.T, path string) []vector {
	t.Helper()
	inp, err := os.ReadFile(path + ".inp")
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(path + ".out")
	if err != nil {
		t.Fatal(err)
	}
	const sep = "\n__ggml_vocab_test__\n"
	texts := strings.Split(string(inp), sep)
	if last := texts[len(texts)-1]; last != "" {
		t.Fatalf("%s.inp: text after the last separator: %q", path, last)
	}
	texts = texts[:len(texts)-1]
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(texts) {
		t.Fatalf("%s: %d strings but %d id lines", path, len(texts), len(lines))
	}
	vs := make([]vector, len(texts))
	for i, text := range texts {
		vs[i].text = text
		for _, f := range strings.Fields(lines[i]) {
			id, err := strconv.ParseInt(f, 10, 32)
			if err != nil {
				t.Fatalf("%s.out line %d: %v", path, i+1, err)
			}
			vs[i].ids = append(vs[i].ids, int32(id))
		}
	}
	return vs
}

// loaded caches the tokenizers of the shared vocabularies across tests.
var loaded struct {
	sync.Mutex
	byName map[string]*Tokenizer // guarded by the mutex
}

// loadVocab builds (once) the tokenizer of a shared vocabulary file.
func loadVocab(t testing.TB, name string) *Tokenizer {
	t.Helper()
	p := shared.Path(t, "vocab/"+name)
	loaded.Lock()
	defer loaded.Unlock()
	if tok, ok := loaded.byName[name]; ok {
		return tok
	}
	tok, err := Load(p)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if loaded.byName == nil {
		loaded.byName = map[string]*Tokenizer{}
	}
	loaded.byName[name] = tok
	return tok
}

func TestVectors(t *testing.T) {
	for _, name := range vocabFiles {
		t.Run(name, func(t *testing.T) {
			tok := loadVocab(t, name)
			for _, v := range readVectors(t, shared.Path(t, "vocab/"+name)) {
				got, err := tok.Encode(v.text, false, false)
				if err != nil {
					t.Errorf("Encode(%q): %v", v.text, err)
					continue
				}
				if !slices.Equal(got, v.ids) {
					t.Errorf("Encode(%q)\n got  %v\n want %v", v.text, got, v.ids)
				}
			}
		})
	}
}
