package decode

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"llmserve/internal/nmse"
	"llmserve/internal/shared"
)

// goldenArchTolerance is the NMSE bound of ../shared/golden-arch/README.md.
func goldenArchTolerance(name string) float64 {
	gemma := strings.HasPrefix(name, "tiny-gemma2")
	switch {
	case strings.HasSuffix(name, "-F32") && gemma:
		return 1e-5
	case strings.HasSuffix(name, "-F32"):
		return 1e-6
	case gemma:
		return 5e-3
	}
	return 2e-3
}

// TestGoldenArchLogits runs the tiny gemma2, phi3 and Mixtral-style models
// of ../shared/golden-arch over the golden prompt in one batch and compares
// every logit with llama.cpp's.
func TestGoldenArchLogits(t *testing.T) {
	dir := shared.Path(t, "golden-arch")
	paths := shared.Glob(t, "golden-arch/*.gguf")
	if len(paths) != 6 {
		t.Fatalf("%d models in golden-arch, want 6 (gemma2, phi3, mixtral × F32, Q8_0)", len(paths))
	}
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".gguf")
		t.Run(name, func(t *testing.T) {
			e := openEngine(t, "golden-arch/"+name+".gguf", CPUOptions{Context: 64})
			ref := readF32s(t, filepath.Join(dir, name+".logits.f32"))
			got := forwardAll(t, e, goldenTokens, 0)
			if len(ref) != len(got) {
				t.Fatalf("%d reference logits, %d computed", len(ref), len(got))
			}
			err, tol := nmse.Of(got, ref), goldenArchTolerance(name)
			t.Logf("NMSE %.3g (tolerance %.0e)", err, tol)
			if err > tol {
				t.Errorf("NMSE %.3g exceeds %.0e", err, tol)
			}
		})
	}
}

// TestGoldenArchGreedy decodes 24 tokens greedily, one per step, for the
// models whose README says an exact F32 implementation matches them.
func TestGoldenArchGreedy(t *testing.T) {
	data, err := os.ReadFile(shared.Path(t, "golden-arch/greedy.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]int32{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		name, ids, _ := strings.Cut(line, " greedy: ")
		want[name] = parseIDs(t, ids)
	}
	for _, name := range []string{"tiny-phi3-F32", "tiny-mixtral-F32"} {
		t.Run(name, func(t *testing.T) {
			if want[name] == nil {
				t.Fatalf("no greedy sequence for %s in greedy.txt", name)
			}
			e := openEngine(t, "golden-arch/"+name+".gguf", CPUOptions{Context: 64})
			if got := greedy(t, e, goldenTokens, len(want[name])); !slices.Equal(got, want[name]) {
				t.Errorf("greedy\n got %v\nwant %v", got, want[name])
			}
		})
	}
}
