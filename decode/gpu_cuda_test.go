//go:build cuda

package decode

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"llmserve/gguf"
	"llmserve/internal/nmse"
	"llmserve/internal/shared"
	"llmserve/model"
	"llmserve/model/synth"
)

func openGPU(t testing.TB, m *model.Model, opts GPUOptions) *GPUEngine {
	t.Helper()
	e, err := NewGPUEngine(m, opts)
	return opened(t, e, err)
}

// opened returns the engine e that an open gave with err, failing t on
// err, and closes it when t ends (a failed close fails t).
func opened[E interface{ Close() error }](t testing.TB, e E, err error) E {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return e
}

// gpuCPUTolerance is the NMSE allowed between the GPU and CPU engines:
// both compute in f32 from exactly dequantized weights for float types; the
// CPU rounds activations to 8 bits before quantized dot products.
func gpuCPUTolerance(name string) float64 {
	switch {
	case strings.HasSuffix(name, "BF16"):
		// From 16 tokens a step runs on the 16-bit tensor cores, which
		// round a BF16 model's inputs to bf16 (8 mantissa bits, as
		// llama.cpp's cuBLAS path does): measured 1.2e-5 on the golden
		// prompt; the golden tolerance against llama.cpp.
		return 1e-4
	case strings.HasSuffix(name, "F32"), strings.HasSuffix(name, "F16"):
		return 1e-5
	}
	return 2e-3
}

// TestGPUGoldenLogits runs the 16 golden tokens in one batch through the
// GPU engine, with and without graphs, and compares the logits with the CPU
// engine's and with llama.cpp's.
func TestGPUGoldenLogits(t *testing.T) {
	forEachGolden(t, func(t *testing.T, dir, name string) {
		m := loadModel(t, "golden/"+name+".gguf")
		want := cpuLogits(t, m, goldenTokens)
		ref := readF32s(t, filepath.Join(dir, name+".logits.f32"))
		var eager []float32
		for _, graphs := range []bool{false, true} {
			e := openGPU(t, m, GPUOptions{Context: 64, Graphs: graphs})
			got := forwardAll(t, e, goldenTokens, 0)
			ec, tc := nmse.Of(got, want), gpuCPUTolerance(name)
			eg, tg := nmse.Of(got, ref), goldenTolerance(name)
			t.Logf("graphs=%v: NMSE vs CPU engine %.3g (tolerance %.0e), vs llama.cpp %.3g (tolerance %.0e)", graphs, ec, tc, eg, tg)
			if !(ec <= tc) {
				t.Errorf("graphs=%v: NMSE vs CPU engine %.3g exceeds %.0e", graphs, ec, tc)
			}
			if !(eg <= tg) {
				t.Errorf("graphs=%v: NMSE vs llama.cpp %.3g exceeds %.0e", graphs, eg, tg)
			}
			if !graphs {
				eager = got
			} else if d := maxAbsDiff(got, eager); d != 0 {
				t.Errorf("graph replay differs from eager launches by up to %g", d)
			}
		}
	})
}

func maxAbsDiff(a, b []float32) float64 {
	var d float64
	for i := range a {
		d = math.Max(d, math.Abs(float64(a[i])-float64(b[i])))
	}
	return d
}

// TestGPUSynthArchs compares the GPU and CPU engines on synthetic tiny
// models of each architecture: llama with llama3 rope frequency factors,
// qwen2 with Q/K/V biases, qwen3 with Q/K norms, in F32 and Q8_0 weights
// (the architectures the GPU engine runs; it refuses the others).
func TestGPUSynthArchs(t *testing.T) {
	for _, arch := range []string{"llama", "qwen2", "qwen3"} {
		for _, ft := range []string{"F32", "Q8_0"} {
			t.Run(arch+"/"+ft, func(t *testing.T) {
				m := synthModel(t, arch, "tiny", ft, false)
				tokens := []int32{1, 5, 77, 200, 13, 260, 42, 99, 3}
				want := cpuLogits(t, m, tokens)
				e := openGPU(t, m, GPUOptions{Context: 64, Graphs: true})
				got := forwardAll(t, e, tokens, 0)
				tol := gpuCPUTolerance(ft)
				err2 := nmse.Of(got, want)
				t.Logf("NMSE vs CPU engine %.3g (tolerance %.0e)", err2, tol)
				if !(err2 <= tol) {
					t.Errorf("NMSE vs CPU engine %.3g exceeds %.0e", err2, tol)
				}
			})
		}
	}
}

// TestGPUStepwise feeds the golden tokens one per step (a graph replayed
// at a new position each time) and in interleaved pairs of sequences, and
// checks the logits against one batched pass.
func TestGPUStepwise(t *testing.T) {
	// On float weights the f32 kernels sum in an order that may depend on
	// the batch size; on the common quantized types every batch size gives
	// a token the same bits in deterministic mode. With MatMulMin 16 the
	// 16-token batch runs on the tensor-core products, whose sums run in
	// another order than the single-token steps', and whose 8-bit rounding
	// of the normalized input may differ in the last step of a value.
	for _, c := range []struct {
		name          string
		deterministic bool
		matMulMin     int
		tol           float64
	}{{"tiny-qwen2-F32", true, 0, 1e-10}, {"tiny-llama-Q4_K_M", true, 0, 0}, {"tiny-llama-Q4_K_M", false, 16, 1e-5}, {"tiny-llama-Q8_0", false, 16, 1e-5}} {
		m := loadModel(t, "golden/"+c.name+".gguf")
		for _, graphs := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/deterministic=%v/matmul=%d/graphs=%v", c.name, c.deterministic, c.matMulMin, graphs), func(t *testing.T) {
				e := openGPU(t, m, GPUOptions{Context: 64, MaxSeqs: 3, Graphs: graphs, Deterministic: c.deterministic, MatMulMin: c.matMulMin})
				want := forwardAll(t, e, goldenTokens, 2)
				V := e.VocabSize()
				// Sequences 0 and 1 get the same tokens one step at a time, in
				// one batch of two; then sequence 2 alone.
				got0 := make([]float32, len(goldenTokens)*V)
				got1 := make([]float32, len(goldenTokens)*V)
				alone := make([]float32, len(goldenTokens)*V)
				out := make([]float32, 2*V)
				var b Batch
				for i, tok := range goldenTokens {
					b.Reset()
					b.Add(tok, int32(i), 0, true)
					b.Add(tok, int32(i), 1, true)
					if err := e.Forward(&b, out); err != nil {
						t.Fatal(err)
					}
					copy(got0[i*V:], out[:V])
					copy(got1[i*V:], out[V:])
				}
				for i, tok := range goldenTokens {
					b.Reset()
					b.Add(tok, int32(i), 2, true)
					if err := e.Forward(&b, alone[i*V:(i+1)*V]); err != nil {
						t.Fatal(err)
					}
				}
				if n := bitsDiffer(got0, alone); n != 0 {
					t.Errorf("%d logits differ between a sequence in a batch of two and alone", n)
				}
				if err := nmse.Of(got0, want); !(err <= c.tol) {
					t.Errorf("sequence 0 step by step: NMSE %.3g vs one batch", err)
				}
				if err := nmse.Of(got1, want); !(err <= c.tol) {
					t.Errorf("sequence 1 step by step: NMSE %.3g vs one batch", err)
				}
				// Three tokens: bucket 4, one padding token that must not
				// disturb sequence 2's cache.
				b.Reset()
				b.Add(goldenTokens[0], 0, 0, true)
				b.Add(goldenTokens[0], 0, 1, false)
				b.Add(goldenTokens[len(goldenTokens)-1], int32(len(goldenTokens)-1), 2, true)
				out3 := make([]float32, 2*V)
				if err := e.Forward(&b, out3); err != nil {
					t.Fatal(err)
				}
				if n := bitsDiffer(out3[:V], alone[:V]); n != 0 {
					t.Errorf("first row of a 3-token step: %d logits differ from the token alone", n)
				}
				if n := bitsDiffer(out3[V:], alone[len(alone)-V:]); n != 0 {
					t.Errorf("last row of a 3-token step: %d logits differ from the token alone", n)
				}
			})
		}
	}
}

// TestGPUPick checks the tokens the engine picks on the device against
// the host sampler's picks with the same draws, over the same logits: a
// greedy row, sampled rows of each kind, and a row without a pick, which
// comes back to the host with its logits. (A pick the device cannot apply
// is covered by the kernels' tests.)
func TestGPUPick(t *testing.T) {
	m := loadModel(t, "golden/tiny-llama-Q4_K_M.gguf")
	e := openGPU(t, m, GPUOptions{Context: 64, MaxSeqs: 6, Graphs: true})
	ref := openGPU(t, m, GPUOptions{Context: 64, MaxSeqs: 6, Graphs: true})
	V := e.VocabSize()
	params := []SamplerParams{
		{},
		{Temperature: 0.9},
		{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05},
		{Temperature: 1.5, TopP: 0.9},
		{Temperature: 1, MinP: 0.2},
		{Temperature: 1, RepeatPenalty: 1.1, PenaltyLastN: 8}, // host
	}
	picked, left := 0, 0
	for step, tok := range goldenTokens {
		var b Batch
		picks := make([]*Pick, len(params))
		us := make([]float32, len(params))
		for s, p := range params {
			b.Add(tok, int32(step), int32(s), true)
			sp := p
			sp.Seed = uint64(step*10 + s)
			smp, err := NewSampler(sp, V)
			if err != nil {
				t.Fatal(err)
			}
			if !smp.OnDevice() {
				continue
			}
			pk := smp.Pick()
			picks[s], us[s] = &pk, pk.U
		}
		toks := make([]int32, len(params))
		logits := make([]float32, len(params)*V)
		if err := e.ForwardPick(&b, picks, toks, logits); err != nil {
			t.Fatal(err)
		}
		want := make([]float32, len(params)*V)
		if err := ref.Forward(&b, want); err != nil {
			t.Fatal(err)
		}
		for s, p := range params {
			smp, _ := NewSampler(p, V)
			row := want[s*V : (s+1)*V]
			w, err := smp.SampleDrawn(row, us[s])
			if err != nil {
				t.Fatal(err)
			}
			if toks[s] < 0 {
				left++
				if picks[s] != nil {
					t.Errorf("step %d row %d: left to the host", step, s)
				}
				if bitsDiffer(logits[s*V:(s+1)*V], row) != 0 {
					t.Errorf("step %d row %d: left to the host without its logits", step, s)
				}
				continue
			}
			picked++
			if toks[s] != w.Token {
				t.Errorf("step %d row %d (%+v, u %.6f): device picked %d, host %d", step, s, p, us[s], toks[s], w.Token)
			}
		}
	}
	t.Logf("%d rows picked on the device, %d left to the host", picked, left)
	if left != len(goldenTokens) {
		t.Errorf("%d rows left to the host, want %d (the penalized row of each step)", left, len(goldenTokens))
	}
}

// TestGPUStoriesGreedy generates 255 tokens greedily from BOS on stories260K
// (head size 8, FFN 172) and compares them with llama.cpp's.
func TestGPUStoriesGreedy(t *testing.T) {
	want := storiesGreedyIDs(t)
	m := loadModel(t, "models/stories260K.gguf")
	e := openGPU(t, m, GPUOptions{Context: 512, Graphs: true})
	got := greedy(t, e, []int32{1}, len(want))
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			t.Fatalf("token %d differs: got %v..., want %v...", i, got[:min(i+1, len(got))], want[:i+1])
		}
	}
}

// TestGPUErrors checks that bad batches are refused before anything runs.
func TestGPUErrors(t *testing.T) {
	m := loadModel(t, "golden/tiny-llama-F32.gguf")
	e := openGPU(t, m, GPUOptions{Context: 8, MaxSeqs: 2})
	out := make([]float32, e.VocabSize())
	cases := []struct {
		name          string
		tok, pos, seq int32
	}{
		{"token", int32(e.VocabSize()), 0, 0},
		{"position", 1, 8, 0},
		{"sequence", 1, 0, 2},
		{"negative sequence", 1, 0, -1},
	}
	for _, c := range cases {
		var b Batch
		b.Add(c.tok, c.pos, c.seq, true)
		if err := e.Forward(&b, out); err == nil {
			t.Errorf("%s out of range: Forward accepted token %d at %d of seq %d", c.name, c.tok, c.pos, c.seq)
		}
	}
	var b Batch
	b.Add(1, 0, 0, true)
	if err := e.Forward(&b, out[:1]); err == nil {
		t.Errorf("Forward accepted a logits buffer of 1 value")
	}
}

// synthModel writes a synthetic model in memory and loads it; with
// bigVocab, it takes the 128256-token llama-bpe vocabulary when the shared
// data has it (the output matrix of Llama 3), else the 261-token built-in.
func synthModel(b testing.TB, arch, shape, fileType string, bigVocab bool) *model.Model {
	b.Helper()
	cfg, err := synth.Shape(arch, shape)
	if err != nil {
		b.Fatal(err)
	}
	opts := synth.Options{Config: cfg, FileType: fileType, Seed: 1}
	if d, err := shared.Dir(); err == nil && bigVocab {
		if v, err := gguf.Open(filepath.Join(d, "vocab/ggml-vocab-llama-bpe.gguf")); err == nil {
			defer v.Close()
			opts.Vocab = v
		}
	}
	var buf bytes.Buffer
	start := time.Now()
	if err := synth.Write(&buf, opts); err != nil {
		b.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		b.Fatal(err)
	}
	m, err := model.Load(f)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("synthesized %s %s %s (%d MB, vocab %d) in %v", arch, shape, fileType, buf.Len()>>20, m.Vocab, time.Since(start).Round(time.Millisecond))
	return m
}

// BenchmarkGPUDecode measures generation: each op is one step of `batch`
// sequences decoding one token each (tg, from an empty cache up to 128
// positions, then again); tok/s counts all sequences. Models are
// synthesized from LLMSERVE_BENCH_MODELS (arch/shape/type, comma
// separated; default llama/1b/Q4_K_M).
func BenchmarkGPUDecode(b *testing.B) {
	spec := os.Getenv("LLMSERVE_BENCH_MODELS")
	if spec == "" {
		spec = "llama/1b/Q4_K_M"
	}
	for _, ms := range strings.Split(spec, ",") {
		parts := strings.Split(ms, "/")
		if len(parts) != 3 {
			b.Fatalf("LLMSERVE_BENCH_MODELS entry %q: want arch/shape/type", ms)
		}
		m := synthModel(b, parts[0], parts[1], parts[2], true)
		for _, graphs := range []bool{true, false} {
			for _, batch := range []int{1, 4, 16, 64} {
				if !graphs && batch > 1 {
					continue
				}
				b.Run(fmt.Sprintf("%s/graphs=%v/B%d", ms, graphs, batch), func(b *testing.B) {
					e := openGPU(b, m, GPUOptions{Context: 256, MaxSeqs: batch, Graphs: graphs})
					out := make([]float32, batch*e.VocabSize())
					var bt Batch
					step := func(pos int) {
						bt.Reset()
						for s := 0; s < batch; s++ {
							bt.Add(int32((pos*7+s)%e.VocabSize()), int32(pos), int32(s), true)
						}
						if err := e.Forward(&bt, out); err != nil {
							b.Fatal(err)
						}
					}
					step(0) // capture
					b.ResetTimer()
					start := time.Now()
					for i := 0; i < b.N; i++ {
						step(i % 128)
					}
					b.ReportMetric(float64(b.N*batch)/time.Since(start).Seconds(), "tok/s")
				})
			}
		}
	}
}

// TestGPULoad checks the loading reports: upload progress ending at the
// weights' size, the device-memory line, and a clear error naming the
// bytes needed and free when the KV cache cannot fit.
func TestGPULoad(t *testing.T) {
	m := loadModel(t, "golden/tiny-llama-Q4_K_M.gguf")
	var calls int
	var last, total int64
	var info []string
	openGPU(t, m, GPUOptions{Context: 8, Info: func(s string) { info = append(info, s) }, Progress: func(done, all int64) {
		if done < last || done > all {
			t.Errorf("progress %d of %d after %d", done, all, last)
		}
		calls, last, total = calls+1, done, all
	}})
	if calls == 0 || last != total || total <= 0 {
		t.Errorf("%d progress calls ending at %d of %d", calls, last, total)
	}
	if len(info) == 0 || !strings.Contains(info[0], "device memory: weights") {
		t.Errorf("no device-memory line in %q", info)
	}
	t.Logf("%s", info[0])
	// A cache of 2^40 bytes per layer half cannot fit.
	_, err := NewGPUEngine(m, GPUOptions{Context: 1 << 20, MaxSeqs: 1 << 12})
	if err == nil || !strings.Contains(err.Error(), "not enough device memory") || !strings.Contains(err.Error(), "free") {
		t.Fatalf("a model too big for the device: %v", err)
	}
	t.Logf("%v", err)
}
