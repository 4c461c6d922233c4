package decode

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"llmserve/gguf"
	"llmserve/internal/nmse"
	"llmserve/internal/shared"
	"llmserve/model"
)

// goldenTokens are the 16 tokens the golden logits were computed on.
var goldenTokens = []int32{1, 270, 271, 272, 45, 260, 280, 287, 259, 272, 273, 274, 275, 276, 277, 278}

// loadModel reads a model from the shared data.
func loadModel(t testing.TB, rel string) *model.Model {
	t.Helper()
	f, err := gguf.Open(shared.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	m, err := model.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// openEngine loads a model from the shared data into a CPU engine.
func openEngine(t testing.TB, rel string, opts CPUOptions) *CPUEngine {
	t.Helper()
	e, err := NewCPUEngine(loadModel(t, rel), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func readF32s(t *testing.T, path string) []float32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, len(b)/4)
	if err := gguf.Dequantize(gguf.TypeF32, b, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// goldenTolerance is the NMSE bound of the shared golden README by weight type.
func goldenTolerance(name string) float64 {
	switch {
	case strings.HasSuffix(name, "-F32"):
		return 1e-6
	case strings.HasSuffix(name, "-F16"), strings.HasSuffix(name, "-BF16"):
		return 1e-4
	}
	return 2e-3
}

// cpuLogits is every row of logits of tokens run in one batch through a
// CPU engine of m with a context of 64, the reference the other engines'
// tests compare with.
func cpuLogits(t testing.TB, m *model.Model, tokens []int32) []float32 {
	t.Helper()
	cpu, err := NewCPUEngine(m, CPUOptions{Context: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	return forwardAll(t, cpu, tokens, 0)
}

// forwardAll feeds tokens to sequence seq at positions 0.. in one batch and
// returns the logits after every token.
func forwardAll(t testing.TB, e Engine, tokens []int32, seq int32) []float32 {
	t.Helper()
	var b Batch
	for i, tok := range tokens {
		b.Add(tok, int32(i), seq, true)
	}
	out := make([]float32, len(tokens)*e.VocabSize())
	if err := e.Forward(&b, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// forEachGolden runs fn as a subtest for each golden model of
// ../shared/golden (dir), named after the model.
func forEachGolden(t *testing.T, fn func(t *testing.T, dir, name string)) {
	dir := shared.Path(t, "golden")
	for _, p := range shared.Glob(t, "golden/*.gguf") {
		name := strings.TrimSuffix(filepath.Base(p), ".gguf")
		t.Run(name, func(t *testing.T) { fn(t, dir, name) })
	}
}

func TestGoldenLogits(t *testing.T) {
	forEachGolden(t, func(t *testing.T, dir, name string) {
		e := openEngine(t, "golden/"+name+".gguf", CPUOptions{Context: 64})
		ref := readF32s(t, filepath.Join(dir, name+".logits.f32"))
		got := forwardAll(t, e, goldenTokens, 0)
		if len(ref) != len(got) {
			t.Fatalf("%d reference logits, %d computed", len(ref), len(got))
		}
		err, tol := nmse.Of(got, ref), goldenTolerance(name)
		t.Logf("NMSE %.3g (tolerance %.0e)", err, tol)
		if err > tol {
			t.Errorf("NMSE %.3g exceeds %.0e", err, tol)
		}
	})
}

// TestGoldenGreedy decodes 24 tokens greedily after the golden prompt, one
// token per step, for the models whose greedy text is stable (F32, F16).
func TestGoldenGreedy(t *testing.T) {
	want := map[string][]int32{}
	data, err := os.ReadFile(shared.Path(t, "golden/greedy.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		name, ids, _ := strings.Cut(line, " greedy: ")
		want[name] = parseIDs(t, ids)
	}
	for _, name := range []string{"tiny-llama-F32", "tiny-llama-F16", "tiny-llama-tied-F32", "tiny-qwen2-F32"} {
		t.Run(name, func(t *testing.T) {
			if want[name] == nil {
				t.Fatalf("no greedy sequence for %s in greedy.txt", name)
			}
			e := openEngine(t, "golden/"+name+".gguf", CPUOptions{Context: 64})
			got := greedy(t, e, goldenTokens, len(want[name]))
			if !slices.Equal(got, want[name]) {
				t.Errorf("greedy\n got %v\nwant %v", got, want[name])
			}
		})
	}
}

// greedy prefills prompt and then generates n tokens at temperature 0.
func greedy(t testing.TB, e Engine, prompt []int32, n int) []int32 {
	t.Helper()
	logits := forwardAll(t, e, prompt, 0)
	V := e.VocabSize()
	next := argmaxLogits(logits[(len(prompt)-1)*V:])
	var out []int32
	row := make([]float32, V)
	var b Batch
	for pos := len(prompt); len(out) < n; pos++ {
		out = append(out, next)
		if len(out) == n {
			break
		}
		b.Reset()
		b.Add(next, int32(pos), 0, true)
		if err := e.Forward(&b, row); err != nil {
			t.Fatal(err)
		}
		next = argmaxLogits(row)
	}
	return out
}

// storiesGreedyIDs is llama.cpp's greedy continuation of BOS on
// stories260K (models/stories260K.greedy.ids).
func storiesGreedyIDs(t testing.TB) []int32 {
	t.Helper()
	data, err := os.ReadFile(shared.Path(t, "models/stories260K.greedy.ids"))
	if err != nil {
		t.Fatal(err)
	}
	return parseIDs(t, string(data))
}

func parseIDs(t testing.TB, s string) []int32 {
	t.Helper()
	var ids []int32
	for _, f := range strings.Fields(s) {
		v, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, int32(v))
	}
	return ids
}

// TestStoriesGreedy generates 255 tokens from BOS on the real stories260K
// model and compares them with llama.cpp's.
func TestStoriesGreedy(t *testing.T) {
	want := storiesGreedyIDs(t)
	e := openEngine(t, "models/stories260K.gguf", CPUOptions{Context: 512})
	got := greedy(t, e, []int32{1}, len(want))
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			t.Fatalf("token %d differs: got %v..., want %v...", i, got[:min(i+1, len(got))], want[:i+1])
		}
	}
}
