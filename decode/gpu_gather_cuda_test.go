//go:build cuda

package decode

import (
	"fmt"
	"testing"

	"llmserve/internal/nmse"
)

// TestGPUGatheredStep runs prompts of 9, 16, 40 and 64 tokens in one step
// with the last row wanted, with every third row wanted (both gathered:
// the output projection for those rows only, eagerly) and with every row
// wanted (from the bucket's graph). In deterministic mode (the
// matrix-vector kernels, whose sums do not depend on the batch) the
// gathered steps must give the all-rows step's logits bit for bit; with
// the tensor-core products (from 16 tokens) they must match the CPU
// engine within the GPU tolerance. Gathered steps must run eagerly, the
// all-rows steps from a graph.
func TestGPUGatheredStep(t *testing.T) {
	for _, name := range []string{"tiny-llama-Q4_K_M", "tiny-llama-Q8_0", "tiny-qwen2-Q4_K_M"} {
		m := loadModel(t, "golden/"+name+".gguf")
		for _, det := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/deterministic=%v", name, det), func(t *testing.T) {
				e := openGPU(t, m, GPUOptions{Context: 128, Graphs: true, Deterministic: det})
				V := m.Vocab
				for _, n := range []int{9, 16, 40, 64} {
					toks, cpu := cpuPrompt(t, m, n, 128)
					run := func(want func(i int) bool) ([]int, []float32, GraphCounts) {
						var b Batch
						var rows []int
						for i := 0; i < n; i++ {
							b.Add(toks[i], int32(i), 0, want(i))
							if want(i) {
								rows = append(rows, i)
							}
						}
						before := e.GraphStats().GraphCounts
						out := make([]float32, len(rows)*V)
						if err := e.Forward(&b, out); err != nil {
							t.Fatalf("prompt of %d, %d rows wanted: %v", n, len(rows), err)
						}
						after := e.GraphStats().GraphCounts
						return rows, out, GraphCounts{Replays: after.Replays - before.Replays, EagerSteps: after.EagerSteps - before.EagerSteps}
					}
					_, all, c := run(func(int) bool { return true })
					if c.Replays != 1 || c.EagerSteps != 0 {
						t.Errorf("prompt of %d, every row wanted: %d replays, %d eager steps; want it replayed from its graph", n, c.Replays, c.EagerSteps)
					}
					for _, p := range []struct {
						name string
						want func(i int) bool
					}{
						{"the last row", func(i int) bool { return i == n-1 }},
						{"every third row", func(i int) bool { return i%3 == 0 }},
					} {
						rows, got, c := run(p.want)
						what := fmt.Sprintf("prompt of %d, %s wanted (%d rows)", n, p.name, len(rows))
						if c.Replays != 0 || c.EagerSteps != 1 {
							t.Errorf("%s: %d replays, %d eager steps; want one gathered step, eagerly", what, c.Replays, c.EagerSteps)
						}
						ref := make([]float32, 0, len(got))
						allRows := make([]float32, 0, len(got))
						for _, r := range rows {
							ref = append(ref, cpu[r*V:(r+1)*V]...)
							allRows = append(allRows, all[r*V:(r+1)*V]...)
						}
						if det {
							if d := bitsDiffer(got, allRows); d != 0 {
								t.Errorf("%s: %d of %d logits differ from the all-rows step's", what, d, len(got))
							}
							continue
						}
						if err, tol := nmse.Of(got, ref), gpuCPUTolerance(name); !(err <= tol) {
							t.Errorf("%s: NMSE %.3g against the CPU engine, want ≤ %.0e", what, err, tol)
						}
					}
				}
			})
		}
	}
}
