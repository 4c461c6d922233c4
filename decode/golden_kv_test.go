package decode

import (
	"path/filepath"
	"strings"
	"testing"

	"llmserve/internal/nmse"
)

// kvLogitsTolerance is the NMSE of the logits of a cache type against the
// f32 cache that a golden model must stay within. With quantized weights
// the activations are quantized to 8 bits before each product, which turns
// the cache's rounding into whole steps now and then: measured up to
// 2.3e-4 (f16) and 4.9e-4 (q8_0), against 8e-8 and 5.2e-5 with float
// weights.
func kvLogitsTolerance(typ KVType, name string) float64 {
	float := strings.HasSuffix(name, "F32") || strings.HasSuffix(name, "F16")
	switch {
	case typ == KVF16 && float:
		return 1e-6
	case typ == KVF16:
		return 1e-3
	case float:
		return 1e-4
	}
	return 2e-3
}

// TestGoldenKVTypes runs the golden models with f16 and q8_0 caches: the
// logits must stay within kvLogitsTolerance of the f32 cache's, and those
// of the f16 cache (the default) within the golden tolerance of llama.cpp's.
func TestGoldenKVTypes(t *testing.T) {
	forEachGolden(t, func(t *testing.T, dir, name string) {
		ref := readF32s(t, filepath.Join(dir, name+".logits.f32"))
		f32 := forwardAll(t, openEngine(t, "golden/"+name+".gguf", CPUOptions{Context: 64, CacheTypeK: KVF32, CacheTypeV: KVF32}), goldenTokens, 0)
		for _, typ := range []KVType{KVF16, KVQ8_0} {
			e := openEngine(t, "golden/"+name+".gguf", CPUOptions{Context: 64, CacheTypeK: typ, CacheTypeV: typ})
			got := forwardAll(t, e, goldenTokens, 0)
			vsF32, vsRef := nmse.Of(got, f32), nmse.Of(got, ref)
			t.Logf("%s: NMSE %.3g against the f32 cache, %.3g against llama.cpp", typ, vsF32, vsRef)
			if tol := kvLogitsTolerance(typ, name); vsF32 > tol {
				t.Errorf("%s: NMSE %.3g against the f32 cache exceeds %.0e", typ, vsF32, tol)
			}
			if typ == KVF16 && vsRef > goldenTolerance(name) {
				t.Errorf("f16: NMSE %.3g against llama.cpp exceeds %.0e", vsRef, goldenTolerance(name))
			}
		}
	})
}

// TestStoriesGreedyKVTypes generates llama.cpp's 255 greedy tokens of
// stories260K with f32 and f16 caches, and logs how far a q8_0 cache
// follows them (its rounding may change a close argmax).
func TestStoriesGreedyKVTypes(t *testing.T) {
	want := storiesGreedyIDs(t)
	for _, typ := range []KVType{KVF32, KVF16, KVQ8_0} {
		t.Run(typ.String(), func(t *testing.T) {
			e := openEngine(t, "models/stories260K.gguf", CPUOptions{Context: 512, CacheTypeK: typ, CacheTypeV: typ})
			got := greedy(t, e, []int32{1}, len(want))
			same := 0
			for same < len(want) && same < len(got) && got[same] == want[same] {
				same++
			}
			t.Logf("%s: the first %d of %d greedy tokens match llama.cpp's", typ, same, len(want))
			if typ != KVQ8_0 && same != len(want) {
				t.Errorf("token %d differs", same)
			}
			if typ == KVQ8_0 && same < 32 {
				t.Errorf("q8_0 cache: only the first %d greedy tokens match", same)
			}
		})
	}
}
