//go:build cuda

package decode

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"llmserve/internal/cuda"
	"llmserve/model"
)

// stepwiseSeq feeds tokens to sequence slot seq in steps of the given
// sizes (cycled) and returns the logits of every token; distinct slots keep
// runs on one engine from sharing cache rows.
func stepwiseSeq(t testing.TB, e Engine, tokens []int32, sizes []int, seq int32) []float32 {
	t.Helper()
	V := e.VocabSize()
	out := make([]float32, len(tokens)*V)
	var b Batch
	for i, k := 0, 0; i < len(tokens); k++ {
		n := min(sizes[k%len(sizes)], len(tokens)-i)
		b.Reset()
		for j := i; j < i+n; j++ {
			b.Add(tokens[j], int32(j), seq, true)
		}
		if err := e.Forward(&b, out[i*V:]); err != nil {
			t.Fatalf("step at position %d of %d tokens: %v", i, n, err)
		}
		i += n
	}
	return out
}

// stepwise feeds tokens to sequence 0 in steps of the given sizes (cycled)
// and returns the logits of every token.
func stepwise(t testing.TB, e Engine, tokens []int32, sizes []int) []float32 {
	t.Helper()
	return stepwiseSeq(t, e, tokens, sizes, 0)
}

// bitsDiffer counts the values of a and b whose bits differ.
func bitsDiffer(a, b []float32) int {
	n := 0
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			n++
		}
	}
	return n
}

// stepSizes exercise buckets 1, 2, 4 and 8 (padded) over the 16 golden
// tokens.
var stepSizes = []int{1, 3, 2, 5, 1, 4}

// TestGPUGraphCheck runs every golden model with the graph check (each
// step eagerly and from its graph, compared bit for bit) and compares the
// logits and counters with an eager engine's.
func TestGPUGraphCheck(t *testing.T) {
	forEachGolden(t, func(t *testing.T, dir, name string) {
		m := loadModel(t, "golden/"+name+".gguf")
		eager := openGPU(t, m, GPUOptions{Context: 64})
		want := stepwise(t, eager, goldenTokens, stepSizes)
		checked := openGPU(t, m, GPUOptions{Context: 64, GraphCheck: true})
		got := stepwise(t, checked, goldenTokens, stepSizes)
		if d := bitsDiffer(got, want); d != 0 {
			t.Errorf("%d of %d logits differ from the eager engine's", d, len(want))
		}
		steps := uint64(len(stepSizes)) // 16 tokens, buckets 1, 4, 2, 8, 1, 4
		es, cs := eager.GraphStats(), checked.GraphStats()
		if es.GraphCounts != (GraphCounts{EagerSteps: steps}) {
			t.Errorf("eager engine stats %+v, want %d eager steps only", es, steps)
		}
		if want := (GraphCounts{Captures: 4, Replays: steps, EagerSteps: steps}); cs.GraphCounts != want {
			t.Errorf("checked engine stats %+v, want %+v", cs, want)
		}
	})
}

// TestGPUGraphCheckMatMul runs the graph check with the tensor-core
// products in every step (MatMulMin 1): each bucket's graph must give the
// eager launches' bits.
func TestGPUGraphCheckMatMul(t *testing.T) {
	for _, name := range []string{"tiny-llama-Q4_K_M", "tiny-llama-Q8_0", "tiny-llama-F16", "tiny-qwen2-Q4_K_M"} {
		m := loadModel(t, "golden/"+name+".gguf")
		t.Run(name, func(t *testing.T) {
			e := openGPU(t, m, GPUOptions{Context: 64, GraphCheck: true, MatMulMin: 1})
			stepwise(t, e, goldenTokens, stepSizes)
			if g := e.GraphStats(); g.Replays != uint64(len(stepSizes)) {
				t.Errorf("%d replays, want %d", g.Replays, len(stepSizes))
			}
		})
	}
}

// TestGPUGraphCheckDetects makes the graph differ from the eager launches
// (the captured step doubles the output norm weights) and expects the
// check to fail the step.
func TestGPUGraphCheckDetects(t *testing.T) {
	m := loadModel(t, "golden/tiny-llama-F32.gguf")
	e := openGPU(t, m, GPUOptions{Context: 64, GraphCheck: true})
	calls := 0
	e.beforeStep = func(B int) error {
		calls++
		if calls == 2 { // the capture, after the eager run
			return e.dev.Add(e.w.outputNorm, e.w.outputNorm)
		}
		return nil
	}
	out := make([]float32, e.VocabSize())
	var b Batch
	b.Add(goldenTokens[0], 0, 0, true)
	err := e.Forward(&b, out)
	t.Logf("Forward: %v", err)
	if err == nil || !strings.Contains(err.Error(), "graph check: batch bucket 1") {
		t.Errorf("Forward with a graph that differs from eager launches: error %v, want a graph check failure of bucket 1", err)
	}
}

// TestGPUStepRerun checks what the graph check relies on: running the same
// step twice leaves the KV cache and the logits bit for bit as one run
// does.
func TestGPUStepRerun(t *testing.T) {
	m := loadModel(t, "golden/tiny-qwen2-Q8_0.gguf")
	e := openGPU(t, m, GPUOptions{Context: 64, MaxSeqs: 2})
	forwardAll(t, e, goldenTokens[:9], 1)
	var b Batch
	for i, tok := range goldenTokens[9:] {
		b.Add(tok, int32(9+i), 1, true)
	}
	b.Add(goldenTokens[0], 0, 0, true)
	V := e.VocabSize()
	first, second := make([]float32, b.Len()*V), make([]float32, b.Len()*V)
	if err := e.Forward(&b, first); err != nil {
		t.Fatal(err)
	}
	cacheBytes := e.kv[0].Bytes()
	snapshot := func() [][]byte {
		var out [][]byte
		for l, c := range e.kv {
			for _, p := range []cuda.DevPtr{c.K, c.V} {
				buf := make([]byte, cacheBytes)
				if err := e.dev.Context().ReadAt(p, buf); err != nil {
					t.Fatalf("read cache of layer %d: %v", l, err)
				}
				out = append(out, buf)
			}
		}
		return out
	}
	before := snapshot()
	if err := e.Forward(&b, second); err != nil {
		t.Fatal(err)
	}
	after := snapshot()
	for i := range before {
		if !bytes.Equal(before[i], after[i]) {
			t.Errorf("layer %d %s cache changed when the step ran again", i/2, []string{"K", "V"}[i%2])
		}
	}
	if d := bitsDiffer(first, second); d != 0 {
		t.Errorf("%d of %d logits differ when the step ran again", d, len(first))
	}
}

// TestGPUCaptureFallback makes the capture of bucket 4 fail (a stream
// synchronization, which a capture cannot record) and checks that the
// bucket then runs eagerly, once warned, with the same logits.
func TestGPUCaptureFallback(t *testing.T) {
	m := loadModel(t, "golden/tiny-llama-Q4_K_M.gguf")
	want := stepwise(t, openGPU(t, m, GPUOptions{Context: 64}), goldenTokens, []int{1, 3})
	var warnings []string
	e := openGPU(t, m, GPUOptions{Context: 64, Graphs: true, Warn: func(s string) { warnings = append(warnings, s) }})
	e.beforeStep = func(B int) error {
		if B == 4 {
			return e.dev.Sync()
		}
		return nil
	}
	got := stepwise(t, e, goldenTokens, []int{1, 3}) // 8 steps: 4 of bucket 1, 4 of bucket 4
	if d := bitsDiffer(got, want); d != 0 {
		t.Errorf("%d of %d logits differ from the eager engine's", d, len(want))
	}
	if len(warnings) != 1 {
		t.Fatalf("%d warnings, want 1: %q", len(warnings), warnings)
	}
	t.Logf("warning: %s", warnings[0])
	for _, s := range []string{"bucket 4", "before_step", "cuStreamSynchronize", "CUDA_ERROR_STREAM_CAPTURE"} {
		if !strings.Contains(warnings[0], s) {
			t.Errorf("warning lacks %q: %s", s, warnings[0])
		}
	}
	if st, want := e.GraphStats().GraphCounts, (GraphCounts{Captures: 1, Replays: 4, Fallbacks: 1, EagerSteps: 4}); st != want {
		t.Errorf("stats %+v, want %+v", st, want)
	}
}

// TestGPUGraphDump captures buckets 1 and 16 with a dump folder and checks
// the DOT files, the capture log lines and their node counts against the
// launches of a profiled step of the bucket's size (bucket 16 runs on the
// tensor-core products, bucket 1 on the matrix-vector kernels).
func TestGPUGraphDump(t *testing.T) {
	m := loadModel(t, "golden/tiny-qwen2-F32.gguf")
	dir := t.TempDir()
	var info []string
	e := openGPU(t, m, GPUOptions{Context: 64, Graphs: true, GraphDump: dir, Info: func(s string) { info = append(info, s) }})
	forwardAll(t, e, goldenTokens[:1], 0)
	forwardAll(t, e, goldenTokens, 0)
	info = slices.DeleteFunc(info, func(s string) bool { return !strings.HasPrefix(s, "cuda graph") })
	if len(info) != 2 {
		t.Fatalf("%d capture log lines, want 2: %q", len(info), info)
	}
	line := regexp.MustCompile(`^cuda graph of batch bucket (\d+): (\d+) nodes, captured in [0-9.]+ ms, instantiated in [0-9.]+ ms$`)
	for i, bucket := range []int{1, 16} {
		var b Batch
		for j, tok := range goldenTokens[:bucket] {
			b.Add(tok, int32(j), 0, j == bucket-1)
		}
		prof, err := e.ProfileStep(&b)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s", info[i])
		mm := line.FindStringSubmatch(info[i])
		if mm == nil || mm[1] != strconv.Itoa(bucket) {
			t.Errorf("capture log line %q does not match %v for bucket %d", info[i], line, bucket)
			continue
		}
		if nodes, _ := strconv.Atoi(mm[2]); nodes != len(prof) {
			t.Errorf("bucket %d: %d graph nodes, but a step launches %d kernels", bucket, nodes, len(prof))
		}
		dot, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("step-b%02d.dot", bucket)))
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"digraph", "get_rows_F32", "matvec_F32_", "rope_store", "attention_part", "attention_merge", "sample"} {
			if !bytes.Contains(dot, []byte(k)) {
				t.Errorf("step-b%02d.dot lacks %q", bucket, k)
			}
		}
	}
}

// TestGPUProfileStep profiles one-token steps of a golden model and checks
// that every operation of every layer is timed once, in order, with
// shares summing to 1.
func TestGPUProfileStep(t *testing.T) {
	m := loadModel(t, "golden/tiny-qwen2-Q4_K_M.gguf")
	e := openGPU(t, m, GPUOptions{Context: 64, Graphs: true})
	forwardAll(t, e, goldenTokens[:4], 0)
	var b Batch
	b.Add(goldenTokens[4], 4, 0, true)
	ts, err := e.ProfileStep(&b)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	if err := WriteKernelTable(&sb, ts); err != nil {
		t.Fatal(err)
	}
	t.Logf("profile of one token of %s:\n%s", "tiny-qwen2-Q4_K_M", sb.String())
	if m.Layers[0][model.AttnQBias] == nil {
		t.Fatalf("%s has no Q/K/V biases; the expected launches below assume them", "tiny-qwen2-Q4_K_M")
	}
	// qwen2 rotates neox-style: the product deals rows i and i + dim/2 of
	// a head as one pair, so the rotation runs inside it too.
	qkv := "attn_norm+qkv+rope+cache_store"
	layerOps := []string{qkv, "attention", "attention", "attn_output+residual",
		"ffn_norm+gate_up+swiglu", "ffn_down+residual"}
	var want []string
	want = append(want, "-1 token_embd")
	for l := range m.Layers {
		for _, op := range layerOps {
			want = append(want, fmt.Sprintf("%d %s", l, op))
		}
	}
	want = append(want, "-1 output_norm+output", "-1 sample", "-1 sample") // sample_mask, sample
	var got []string
	var share float64
	for _, k := range ts {
		got = append(got, fmt.Sprintf("%d %s", k.Layer, k.Op))
		share += k.Share
		if !(k.Micros > 0) || k.Kernel == "" {
			t.Errorf("launch %+v: no kernel name or no time", k)
		}
		if k.Op == qkv && k.Kernel != "rope_store" && !strings.HasPrefix(k.Kernel, "mvq_") && k.Kernel != "mvk_1" {
			t.Errorf("launch %+v: the Q4_K/Q6_K products run %s, not an 8-bit kernel", k, k.Kernel)
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("profiled launches (layer op):\n got %v\nwant %v", got, want)
	}
	if math.Abs(share-1) > 1e-9 {
		t.Errorf("shares sum to %v", share)
	}
	// The profiled step wrote the cache like Forward: the next token's
	// logits match a fresh eager engine's.
	next := make([]float32, e.VocabSize())
	b.Reset()
	b.Add(goldenTokens[5], 5, 0, true)
	if err := e.Forward(&b, next); err != nil {
		t.Fatal(err)
	}
	ref := forwardAll(t, openGPU(t, m, GPUOptions{Context: 64}), goldenTokens[:6], 0)
	if d := bitsDiffer(next, ref[5*e.VocabSize():]); d != 0 {
		t.Errorf("after a profiled step, %d logits of the next token differ from an eager engine's", d)
	}
}

// TestGPUProfileSynth1B prints the kernel profile of one token of a
// synthetic model of the Llama-3.2-1B shape (Q4_K_M, 128256-token
// vocabulary) at position 511, and checks the per-kernel totals agree with
// the step's total.
func TestGPUProfileSynth1B(t *testing.T) {
	if testing.Short() {
		t.Skip("synthesizes a 1B model")
	}
	m := synthModel(t, "llama", "1b", "Q4_K_M", true)
	e := openGPU(t, m, GPUOptions{Context: 512, Graphs: true})
	var b Batch
	b.Add(1, 511, 0, true)
	for range 2 { // the first run loads the kernels' code
		ts, err := e.ProfileStep(&b)
		if err != nil {
			t.Fatal(err)
		}
		var sb strings.Builder
		if err := WriteKernelTable(&sb, ts); err != nil {
			t.Fatal(err)
		}
		total, matvec := 0.0, 0.0
		for _, k := range ts {
			total += k.Micros
			if strings.HasPrefix(k.Kernel, "mvq_") {
				matvec += k.Micros
			}
		}
		t.Logf("%d launches, %.0f µs, matrix products %.0f%%", len(ts), total, 100*matvec/total)
		if want := 1 + 16*6 + 3; len(ts) != want { // 6 per layer: llama's rotation runs inside the Q/K/V product; output, sample_mask, sample
			t.Errorf("%d launches, want %d", len(ts), want)
		}
		for _, k := range ts {
			if k.Kernel == "rope_store" {
				t.Errorf("layer %d: rope_store launched; the rotation should run inside the Q/K/V product", k.Layer)
			}
		}
		if !(matvec > 0 && matvec < total) {
			t.Errorf("matrix product time %.1f µs of %.1f", matvec, total)
		}
		if !strings.Contains(sb.String(), "ffn_norm+gate_up+swiglu") {
			t.Errorf("table lacks the gate/up product:\n%s", sb.String())
		}
		t.Logf("\n%s", lastLines(sb.String(), 16))
	}
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// TestGPUOverlap runs every golden model from graphs with kernels that
// start before the one ahead has finished and wait for its results on the
// device, and with kernels launched one after another; the logits must
// agree bit for bit (a kernel reading its input too early would not).
func TestGPUOverlap(t *testing.T) {
	forEachGolden(t, func(t *testing.T, dir, name string) {
		m := loadModel(t, "golden/"+name+".gguf")
		serial := openGPU(t, m, GPUOptions{Context: 64, Graphs: true, NoOverlap: true})
		if serial.overlap {
			t.Fatal("NoOverlap engine has overlap on")
		}
		want := stepwise(t, serial, goldenTokens, stepSizes)
		for _, graphs := range []bool{true, false} {
			e := openGPU(t, m, GPUOptions{Context: 64, Graphs: graphs})
			if !e.overlap {
				t.Skip("this device or driver has no programmatic dependent launch (needs compute capability 9.0 and CUDA 12.3)")
			}
			if d := bitsDiffer(stepwise(t, e, goldenTokens, stepSizes), want); d != 0 {
				t.Errorf("graphs %v: %d of %d logits differ from the serial launches'", graphs, d, len(want))
			}
		}
	})
}
