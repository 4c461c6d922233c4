//go:build cuda

package decode

import (
	"math/rand/v2"
	"strings"
	"testing"

	"llmserve/internal/nmse"
	"llmserve/model"
)

// cpuPrompt is a prompt of n tokens (prefillTokens) and every row of its
// logits from the CPU engine with a context of ctx.
func cpuPrompt(t *testing.T, m *model.Model, n, ctx int) ([]int32, []float32) {
	t.Helper()
	cpu, err := NewCPUEngine(m, CPUOptions{Context: ctx})
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	toks := prefillTokens(n, cpu.VocabSize())
	return toks, forwardAll(t, cpu, toks, 0)
}

// forwardBeside runs toks in one step as sequence 1 with its last row
// wanted, beside the token toks[0] at position 0 of sequence 2, whose row
// is wanted too, and returns the two rows of logits.
func forwardBeside(t *testing.T, e Engine, toks []int32) []float32 {
	t.Helper()
	var b Batch
	for i, tok := range toks {
		b.Add(tok, int32(i), 1, i == len(toks)-1)
	}
	b.Add(toks[0], 0, 2, true)
	out := make([]float32, 2*e.VocabSize())
	if err := e.Forward(&b, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// prefillTokens are n tokens drawn from a vocabulary of vocab.
func prefillTokens(n, vocab int) []int32 {
	r := rand.New(rand.NewPCG(7, uint64(n)))
	toks := make([]int32, n)
	for i := range toks {
		toks[i] = int32(r.IntN(vocab))
	}
	return toks
}

// deterministicTypes are the golden models whose every matrix the 8-bit
// matrix-vector kernels read (Q4_0, Q8_0, Q4_K, Q5_K, Q6_K).
var deterministicTypes = map[string]bool{
	"tiny-llama-Q4_0": true, "tiny-llama-Q8_0": true, "tiny-llama-Q4_K_M": true, "tiny-llama-Q5_K_M": true,
	"tiny-llama-Q6_K": true, "tiny-qwen2-Q8_0": true, "tiny-qwen2-Q4_K_M": true,
}

// TestGPUPrefill runs a 300-token prompt through the GPU engine on every
// golden model and compares it with the CPU engine: with every row's
// logits wanted (steps of 64 wanted rows, on the tensor-core products), as
// one step with the last row's logits only (the output projection of that
// row alone), as that step beside single tokens of two other sequences,
// and in deterministic mode, whose rows must equal the same tokens run one
// by one.
func TestGPUPrefill(t *testing.T) {
	const n = 300
	forEachGolden(t, func(t *testing.T, dir, name string) {
		m := loadModel(t, "golden/"+name+".gguf")
		V := m.Vocab
		toks, want := cpuPrompt(t, m, n, 320)
		tol := gpuCPUTolerance(name)
		last := want[(n-1)*V:]

		// The prompt's attention rounds its operands to f16 (as llama.cpp's
		// f16 cache does): the tolerance of the golden tests against
		// llama.cpp for F16 weights, 1e-4, at least, and against the steps
		// of 64 (f32 attention) what an f16 cache costs these models beside
		// the f32 one (TestGoldenKVTypes measured up to 2.2e-4 on the
		// device): 5e-4.
		ptol, same := max(tol, 1e-4), 5e-4
		e := openGPU(t, m, GPUOptions{Context: 320, MaxSeqs: 3, Graphs: true})
		all := forwardAll(t, e, toks, 0)
		if err := nmse.Of(all, want); !(err <= ptol) {
			t.Errorf("every row wanted: NMSE %.3g vs the CPU engine exceeds %.0e", err, ptol)
		}

		// The prompt again in sequence 1 with its last row wanted, beside
		// one token of sequence 2 whose logits are wanted too.
		out := forwardBeside(t, e, toks)
		if err := nmse.Of(out[:V], last); !(err <= ptol) {
			t.Errorf("one step, last row wanted: NMSE %.3g vs the CPU engine exceeds %.0e", err, ptol)
		}
		if err := nmse.Of(out[:V], all[(n-1)*V:]); !(err <= same) {
			t.Errorf("one step, last row wanted: NMSE %.3g vs the rows of steps of 64", err)
		}
		if err := nmse.Of(out[V:], want[:V]); !(err <= ptol) {
			t.Errorf("a token beside the prompt: NMSE %.3g vs the CPU engine exceeds %.0e", err, ptol)
		}
		t.Logf("NMSE vs CPU: all rows %.3g, last row of one step %.3g (tolerance %.0e)", nmse.Of(all, want), nmse.Of(out[:V], last), ptol)
		// Deterministic mode: the prompt in one batch and token by token
		// give the same bits, on the types the 8-bit matrix-vector kernels
		// read (the others' f32 sums depend on the batch size).
		if !deterministicTypes[name] {
			t.Logf("deterministic mode: %s has weights outside the 8-bit kernels' types; not compared bit for bit", name)
			return
		}
		d := openGPU(t, m, GPUOptions{Context: 320, MaxSeqs: 2, Graphs: true, Deterministic: true})
		batched := forwardAll(t, d, toks[:100], 0)
		var b Batch
		for i, tok := range toks[:100] {
			b.Reset()
			b.Add(tok, int32(i), 1, true)
			if err := d.Forward(&b, out[:V]); err != nil {
				t.Fatal(err)
			}
			if k := bitsDiffer(out[:V], batched[i*V:(i+1)*V]); k != 0 {
				t.Fatalf("deterministic: token %d: %d logits differ between one batch and one by one", i, k)
			}
		}
		if err := nmse.Of(batched, want[:100*V]); !(err <= tol) {
			t.Errorf("deterministic: NMSE %.3g vs the CPU engine exceeds %.0e", err, tol)
		}
	})
}

// TestGPUProfilePrompt profiles one 100-token prompt step: the layers run
// the tensor-core sequence of operations, only the wanted row reaches the
// output projection, and the prompt's attention runs on the tensor cores.
func TestGPUProfilePrompt(t *testing.T) {
	m := loadModel(t, "golden/tiny-qwen2-Q4_K_M.gguf")
	e := openGPU(t, m, GPUOptions{Context: 128, Graphs: true})
	var b Batch
	toks := prefillTokens(100, e.VocabSize())
	for i, tok := range toks {
		b.Add(tok, int32(i), 0, i == len(toks)-1)
	}
	ts, err := e.ProfileStep(&b)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	if err := WriteKernelTable(&sb, ts); err != nil {
		t.Fatal(err)
	}
	t.Logf("profile of a 100-token prompt of tiny-qwen2-Q4_K_M:\n%s", sb.String())
	ops := map[string]bool{}
	for _, k := range ts {
		ops[k.Op] = true
		if k.Op == "attention" && !strings.HasPrefix(k.Kernel, "attention_prefill") {
			t.Errorf("the prompt's attention ran %s, not the tensor-core prefill", k.Kernel)
		}
		if !(k.Micros > 0) || k.Kernel == "" {
			t.Errorf("launch %+v: no kernel name or no time", k)
		}
		if k.Op == "output_norm+output" && k.Kernel != "" && !strings.HasSuffix(k.Kernel, "_1") {
			t.Errorf("the output projection ran %s, not a one-row kernel", k.Kernel)
		}
	}
	for _, op := range []string{"token_embd", "attn_norm+qkv", "rope+cache_store", "attention", "attn_output+residual",
		"ffn_norm+gate_up", "swiglu+ffn_down+residual", "gather_output_rows", "output_norm+output", "sample"} {
		if !ops[op] {
			t.Errorf("no launch of %q in the prompt step", op)
		}
	}
	// The profiled step wrote the cache: the next token's logits match an
	// engine that ran the prompt through Forward.
	next := make([]float32, e.VocabSize())
	b.Reset()
	b.Add(1, 100, 0, true)
	if err := e.Forward(&b, next); err != nil {
		t.Fatal(err)
	}
	// The reference runs the same two steps through Forward: the prompt
	// (its attention on the f16 prefill kernel) and the token (decode
	// attention over the f32 cache).
	ref := openGPU(t, m, GPUOptions{Context: 128})
	b.Reset()
	for i, tok := range toks {
		b.Add(tok, int32(i), 0, i == len(toks)-1)
	}
	want := make([]float32, e.VocabSize())
	if err := ref.Forward(&b, want); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	b.Add(1, 100, 0, true)
	if err := ref.Forward(&b, want); err != nil {
		t.Fatal(err)
	}
	if err := nmse.Of(next, want); !(err <= 1e-6) {
		t.Errorf("after a profiled prompt step, the next token's logits differ from a fresh engine's: NMSE %.3g", err)
	}
}
