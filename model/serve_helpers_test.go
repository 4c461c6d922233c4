package model_test

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"llmserve/decode"
	"llmserve/gguf"
	"llmserve/model"
	"llmserve/model/synth"
	"llmserve/model/tokenizer"
)

// tinyRaw writes a tiny synthetic F32 model of arch and takes it apart.
func tinyRaw(tb testing.TB, arch string) *synth.Raw {
	tb.Helper()
	cfg, err := synth.Tiny(arch)
	if err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	if err := synth.Write(&buf, synth.Options{Config: cfg, FileType: "F32", Seed: 1, Workers: 1}); err != nil {
		tb.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		tb.Fatal(err)
	}
	return synth.RawFrom(f)
}

// allocBound is the most a load plus a 16-position CPU engine of one of
// these tiny files may allocate on the heap.
const allocBound = 8 << 20

// outcome is what loading and serving one file gave.
type outcome struct {
	loadErr  error // model.Open or the engine refused the file
	panicked string
	alloc    uint64 // heap bytes allocated while loading and serving
}

// openAndServe loads path through model.Open, as the binary does, and when
// it loads builds a small CPU engine, runs a forward step over a prompt and
// generates a few tokens greedily, checking the ids, logits and text. A
// panic is caught and reported in the outcome.
func openAndServe(t *testing.T, path, label string, finiteLogits bool) (o outcome) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	defer func() {
		if r := recover(); r != nil {
			o.panicked = fmt.Sprintf("%v\n%s", r, debug.Stack())
		}
		runtime.ReadMemStats(&after)
		o.alloc = after.TotalAlloc - before.TotalAlloc
	}()
	f, m, err := model.Open(path)
	if err != nil {
		return outcome{loadErr: err}
	}
	defer f.Close()
	o.loadErr = serve(t, f, m, label, finiteLogits)
	return o
}

// serve runs a loaded model on the CPU engine. Errors the engine gives at
// construction count as a refusal; errors after it are test failures.
func serve(t *testing.T, f *gguf.File, m *model.Model, label string, finiteLogits bool) error {
	e, err := decode.NewCPUEngine(m, decode.CPUOptions{Context: 16, MaxSeqs: 1, MaxBatch: 8, Threads: 1})
	if err != nil {
		return err
	}
	defer e.Close()
	prompt := []int32{0, 1, 2}
	if f.Has("tokenizer.ggml.model") {
		tok, err := tokenizer.FromGGUF(f)
		if err != nil {
			t.Errorf("%s: model.Open accepted a tokenizer that does not build: %v", label, err)
			return nil
		}
		if prompt, err = tok.Encode("Hello world", true, false); err != nil || len(prompt) == 0 {
			t.Errorf("%s: encode: %v, %d ids", label, err, len(prompt))
			return nil
		}
		defer func() { _ = tok.Decode(prompt) }()
	}
	if err := generate(e, prompt, 3, finiteLogits); err != nil {
		t.Errorf("%s: loaded model does not serve: %v", label, err)
	}
	return nil
}

// generate runs the prompt in one step, then n greedy decode steps, with
// every token inside the vocabulary. When finiteLogits is set every logit
// must be finite (weights that decode to NaN may legitimately give NaN).
func generate(e decode.Engine, prompt []int32, n int, finiteLogits bool) error {
	V := e.VocabSize()
	logits := make([]float32, V)
	// llama.cpp's default sampling chain, run on every row beside the
	// greedy pick that drives the loop.
	sampler, err := decode.NewSampler(decode.SamplerParams{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, Seed: 1}, V)
	if err != nil {
		return err
	}
	var b decode.Batch
	for i, tok := range prompt {
		b.Add(tok, int32(i), 0, i == len(prompt)-1)
	}
	pos := len(prompt)
	for step := 0; ; step++ {
		if err := e.Forward(&b, logits); err != nil {
			return fmt.Errorf("step %d: %w", step, err)
		}
		best := 0
		for i, v := range logits {
			if finiteLogits && (math.IsNaN(float64(v)) || math.IsInf(float64(v), 0)) {
				return fmt.Errorf("step %d: logit %d is %g", step, i, v)
			}
			if v > logits[best] {
				best = i
			}
		}
		if got, err := sampler.Sample(slices.Clone(logits)); err == nil && (got.Token < 0 || int(got.Token) >= V) {
			return fmt.Errorf("step %d: sampled token %d outside the vocabulary of %d", step, got.Token, V)
		}
		if step == n || pos >= e.ContextSize() {
			return nil
		}
		b.Reset()
		b.Add(int32(best), int32(pos), 0, true)
		pos++
	}
}

// writeFile writes data into dir under name and returns the path.
func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// oneLine reports whether an error message is a single non-empty line.
func oneLine(err error) bool {
	s := err.Error()
	return s != "" && !strings.ContainsAny(s, "\n\r")
}
