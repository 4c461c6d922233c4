//go:build cuda

package decode

import (
	"strings"
	"testing"
)

// bucketWant is what a test expects of one bucket's figures.
type bucketWant struct {
	size                         int
	replays, eager, real, padded uint64
	captured                     bool
}

// checkBuckets compares the per-bucket figures with want, bucket by bucket.
func checkBuckets(t *testing.T, got []BucketStats, want []bucketWant) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d buckets %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Size != w.size || g.Replays != w.replays || g.EagerSteps != w.eager || g.RealTokens != w.real || g.PaddedTokens != w.padded {
			t.Errorf("bucket %d: size %d, %d replays, %d eager steps, %d tokens, %d padding; want size %d, %d, %d, %d, %d",
				i, g.Size, g.Replays, g.EagerSteps, g.RealTokens, g.PaddedTokens, w.size, w.replays, w.eager, w.real, w.padded)
		}
		if captured := g.Nodes > 0 && g.Capture > 0 && g.Instantiate > 0; captured != w.captured {
			t.Errorf("bucket %d: %d nodes, captured in %v, instantiated in %v; want a graph: %v", g.Size, g.Nodes, g.Capture, g.Instantiate, w.captured)
		}
	}
}

// TestGPUGraphBuckets runs the golden tokens in steps of 1, 3, 2, 5, 1 and
// 4 tokens with graph buckets 1 and 4 and the graph check (each bucket's
// step eagerly and from its graph, bit for bit): the step of 5 tokens runs
// eagerly at its own size, and every token's logits are those of an eager
// engine with the default buckets (deterministic mode: a token's logits do
// not depend on the size of its step). The per-bucket figures count the
// steps, tokens and padding of each bucket.
func TestGPUGraphBuckets(t *testing.T) {
	m := loadModel(t, "golden/tiny-llama-Q4_K_M.gguf")
	eager := openGPU(t, m, GPUOptions{Context: 64, Deterministic: true})
	want := stepwise(t, eager, goldenTokens, stepSizes)
	e := openGPU(t, m, GPUOptions{Context: 64, Deterministic: true, GraphCheck: true, Buckets: []int{1, 4}})
	got := stepwise(t, e, goldenTokens, stepSizes)
	if d := bitsDiffer(got, want); d != 0 {
		t.Errorf("%d of %d logits differ from the eager engine's with the default buckets", d, len(want))
	}
	st := e.GraphStats()
	// Five bucket steps, each run eagerly and replayed, and the step of 5.
	if want := (GraphCounts{Captures: 2, Replays: 5, EagerSteps: 6}); st.GraphCounts != want {
		t.Errorf("totals %+v, want %+v", st.GraphCounts, want)
	}
	checkBuckets(t, st.Buckets, []bucketWant{
		{size: 1, replays: 2, eager: 2, real: 2, captured: true},
		{size: 4, replays: 3, eager: 3, real: 3 + 2 + 4, padded: 1 + 2, captured: true},
	})
	// The eager engine pads to the default buckets and captures nothing.
	checkBuckets(t, eager.GraphStats().Buckets, []bucketWant{
		{size: 1, eager: 2, real: 2}, {size: 2, eager: 1, real: 2}, {size: 4, eager: 2, real: 3 + 4, padded: 1},
		{size: 8, eager: 1, real: 5, padded: 3}, {size: 16}, {size: 32}, {size: 64},
	})
}

// TestGPUBadBuckets checks that a bad bucket list is refused by name.
func TestGPUBadBuckets(t *testing.T) {
	m := loadModel(t, "golden/tiny-llama-F32.gguf")
	for _, b := range [][]int{{}, {4, 2}, {0, 8}, {1, 65}} {
		e, err := NewGPUEngine(m, GPUOptions{Context: 64, Buckets: b})
		if err == nil {
			e.Close()
			t.Errorf("buckets %v: no error", b)
			continue
		}
		if !strings.Contains(err.Error(), "graph buckets") {
			t.Errorf("buckets %v: error %q does not name the graph buckets", b, err)
		}
	}
}
