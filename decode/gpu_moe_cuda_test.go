//go:build cuda

package decode

import (
	"fmt"
	"strings"
	"testing"

	"llmserve/internal/nmse"
	"llmserve/model"
)

// moeLayers is the number of blocks of m with an expert mixture.
func moeLayers(m *model.Model) int {
	n := 0
	for _, b := range m.Graph.Blocks {
		for _, s := range b {
			if s.Op == model.OpMoE {
				n++
				break
			}
		}
	}
	return n
}

// TestGPUMoEGrouped runs prompts of 65 and 100 tokens, each in one step
// (over MaxBucket: eager, its expert mixtures grouped by expert) with its
// last 64 rows wanted, then the next token alone from a graph (the
// mixture over every expert's rows, nothing read back), through the tiny
// Mixtral-style models of golden-arch and of model/synth (embedding 256:
// the tensor-core products for experts of 16 rows or more, the
// matrix-vector kernels below), and compares the logits with the CPU
// engine's within the tolerances of the other GPU tests. The grouped path
// must have run once per mixture layer of each prompt step and never for
// the single tokens; a profile of a prompt step (captured in a graph)
// must keep to the path that reads nothing back.
func TestGPUMoEGrouped(t *testing.T) {
	type moeCase struct {
		name string
		load func(t *testing.T) *model.Model
		tol  float64
	}
	golden := func(name string) moeCase {
		return moeCase{"golden-arch/" + name, func(t *testing.T) *model.Model { return loadModel(t, "golden-arch/"+name+".gguf") }, goldenArchTolerance(name)}
	}
	cases := []moeCase{golden("tiny-mixtral-F32"), golden("tiny-mixtral-Q8_0")}
	for _, ft := range []string{"F32", "Q8_0", "Q4_K_M"} {
		cases = append(cases, moeCase{"synth/mixtral-tiny-" + ft, func(t *testing.T) *model.Model { return synthModel(t, "mixtral", "tiny", ft, false) }, gpuCPUTolerance(ft)})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := c.load(t)
			layers := moeLayers(m)
			if layers == 0 {
				t.Fatal("the model has no expert mixture")
			}
			e := openGPU(t, m, GPUOptions{Context: 128, MaxSeqs: 2, Graphs: true})
			if e.exec == nil || e.exec.groups == nil {
				t.Fatal("the engine has no grouped expert scratch")
			}
			V := m.Vocab
			for _, n := range []int{MaxBucket + 1, 100} {
				toks, want := cpuPrompt(t, m, n+1, 128)
				const wanted = 64
				var b Batch
				for i := 0; i < n; i++ {
					b.Add(toks[i], int32(i), 0, i >= n-wanted)
				}
				runs := e.exec.groups.runs
				got := make([]float32, wanted*V)
				if err := e.Forward(&b, got); err != nil {
					t.Fatal(err)
				}
				if d := e.exec.groups.runs - runs; d != layers {
					t.Errorf("prompt of %d: %d mixtures ran grouped, want %d (one per layer)", n, d, layers)
				}
				name := fmt.Sprintf("prompt of %d, last %d rows", n, wanted)
				ref := want[(n-wanted)*V : n*V]
				// The same step on an engine without the grouping (every
				// expert over every row): where both differ from the CPU
				// engine alike, the difference is not the grouping's.
				dense := openGPU(t, m, GPUOptions{Context: 128, MaxSeqs: 2, Graphs: true, MoEDense: true})
				dout := make([]float32, wanted*V)
				if err := dense.Forward(&b, dout); err != nil {
					t.Fatal(err)
				}
				vsDense, denseErr, err := nmse.Of(got, dout), nmse.Of(dout, ref), nmse.Of(got, ref)
				t.Logf("%s: NMSE grouped vs dense %.3g, dense vs the CPU engine %.3g, grouped vs the CPU engine %.3g",
					name, vsDense, denseErr, err)
				switch {
				case strings.HasSuffix(c.name, "-F32") && !(vsDense <= 1e-9):
					// F32 experts take the same products grouped as dense:
					// the grouping must not change a bit that matters.
					t.Errorf("%s: NMSE %.3g grouped vs dense, want ≤ 1e-9 (F32 experts run the same products either way)", name, vsDense)
				case err <= c.tol || routingFlips(t, c.name, got, ref, V, c.tol):
					t.Logf("%s: NMSE vs the CPU engine %.3g (tolerance %.0e)", name, err, c.tol)
				case err <= 1.5*denseErr:
					// A step of 65 rows or more runs its dense products on
					// the 16-bit tensor cores and the grouped experts' on
					// the int8 ones: the CPU engine rounds otherwise, and in
					// the tiny golden model one expert pick near a tie
					// changes every later row through attention. The
					// grouping must add no error of its own beyond that.
					t.Logf("%s: NMSE vs the CPU engine %.3g over %.0e, as the dense engine's own %.3g", name, err, c.tol, denseErr)
				default:
					t.Errorf("%s: NMSE %.3g vs the CPU engine exceeds %.0e and 1.5× the dense engine's %.3g", name, err, c.tol, denseErr)
				}
				var one Batch
				one.Add(toks[n], int32(n), 0, true)
				runs = e.exec.groups.runs
				next := make([]float32, V)
				if err := e.Forward(&one, next); err != nil {
					t.Fatal(err)
				}
				if d := e.exec.groups.runs - runs; d != 0 {
					t.Errorf("a single token after the prompt of %d: %d mixtures ran grouped, want 0", n, d)
				}
				if err := nmse.Of(next, want[n*V:]); !(err <= c.tol) && !routingFlips(t, c.name, next, want[n*V:], V, c.tol) {
					t.Errorf("token %d after the prompt: NMSE %.3g vs the CPU engine exceeds %.0e", n, err, c.tol)
				}
			}
			// A profiled step is captured: it must not group (a read back
			// under capture fails the capture).
			var p Batch
			for i := 0; i < 100; i++ {
				p.Add(int32(i%V), int32(i), 1, i == 99)
			}
			runs := e.exec.groups.runs
			ts, err := e.ProfileStep(&p)
			if err != nil {
				t.Fatalf("profile of a step of 100 tokens: %v", err)
			}
			if len(ts) == 0 {
				t.Error("profile of a step of 100 tokens: no kernels")
			}
			if d := e.exec.groups.runs - runs; d != 0 {
				t.Errorf("profile of a step of 100 tokens: %d mixtures ran grouped under capture, want 0", d)
			}
		})
	}
	// A deterministic engine's steps hold at most MaxBucket tokens: no
	// grouped scratch.
	m := synthModel(t, "mixtral", "tiny", "Q8_0", false)
	if e := openGPU(t, m, GPUOptions{Context: 64, Deterministic: true}); e.exec == nil || e.exec.groups != nil {
		t.Errorf("deterministic engine: executor %v, grouped scratch allocated %v; want an executor without it", e.exec != nil, e.exec != nil && e.exec.groups != nil)
	}
	// LLMSERVE_MOE_GROUPED=0 turns the grouping off: no grouped scratch.
	t.Setenv("LLMSERVE_MOE_GROUPED", "0")
	if e := openGPU(t, m, GPUOptions{Context: 128, MaxSeqs: 2, Graphs: true}); e.exec == nil || e.exec.groups != nil {
		t.Errorf("LLMSERVE_MOE_GROUPED=0: executor %v, grouped scratch allocated %v; want an executor without it", e.exec != nil, e.exec != nil && e.exec.groups != nil)
	}
}
