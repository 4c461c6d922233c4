package synth

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"llmserve/gguf"
	"llmserve/internal/shared"
	"llmserve/model"
)

// writeTiny writes a tiny model and parses it back.
func writeTiny(t *testing.T, arch, typ string, seed uint64, vocab *gguf.File, workers int) ([]byte, *gguf.File) {
	t.Helper()
	cfg, err := Shape(arch, "tiny")
	if err != nil {
		t.Fatal(err)
	}
	return writeConfig(t, cfg, typ, seed, vocab, workers)
}

// writeConfig writes the model of cfg and parses it back.
func writeConfig(t *testing.T, cfg Config, typ string, seed uint64, vocab *gguf.File, workers int) ([]byte, *gguf.File) {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, Options{Config: cfg, FileType: typ, Seed: seed, Vocab: vocab, Workers: workers}); err != nil {
		t.Fatalf("%s %s: %v", cfg.Name, typ, err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatalf("%s %s: Parse: %v", cfg.Name, typ, err)
	}
	return buf.Bytes(), f
}

// TestTinyMetadata checks the architecture keys of each tiny model against
// its Config, and that the project's model loader reads the same
// hyperparameters back.
func TestTinyMetadata(t *testing.T) {
	for _, arch := range []string{"llama", "qwen2", "qwen3"} {
		t.Run(arch, func(t *testing.T) {
			cfg, _ := Shape(arch, "tiny")
			_, f := writeTiny(t, arch, "F32", 1, nil, 2)
			a := arch + "."
			uints := map[string]int{
				a + "context_length":          cfg.ContextLength,
				a + "embedding_length":        cfg.Embedding,
				a + "block_count":             cfg.Layers,
				a + "feed_forward_length":     cfg.FFN,
				a + "attention.head_count":    cfg.Heads,
				a + "attention.head_count_kv": cfg.KVHeads,
				a + "rope.dimension_count":    cfg.HeadDim,
				a + "vocab_size":              256 + len(builtinSpecials),
				"general.file_type":           0,
			}
			for key, want := range uints {
				if got, err := f.Uint32(key); err != nil || int(got) != want {
					t.Errorf("%s = %d (%v), want %d", key, got, err, want)
				}
			}
			floats := map[string]float32{
				a + "rope.freq_base":                   cfg.RopeBase,
				a + "attention.layer_norm_rms_epsilon": cfg.RMSEps,
			}
			for key, want := range floats {
				if got, err := f.Float32(key); err != nil || got != want {
					t.Errorf("%s = %g (%v), want %g", key, got, err, want)
				}
			}
			if got, _ := f.String("general.architecture"); got != arch {
				t.Errorf("general.architecture = %q", got)
			}

			m, err := model.Load(f)
			if err != nil {
				t.Fatalf("model.Load: %v", err)
			}
			got := []int{m.Embd, m.Config.Layers, m.Heads, m.KVHeads, m.HeadDim, m.FFN, m.Vocab}
			want := []int{cfg.Embedding, cfg.Layers, cfg.Heads, cfg.KVHeads, cfg.HeadDim, cfg.FFN, 256 + len(builtinSpecials)}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("model.Load reads embd, layers, heads, kv heads, head dim, ffn, vocab = %v, want %v", got, want)
			}
			if rf := m.Tensors[model.RopeFreqs]; (rf != nil) != (cfg.RopeScaling != nil) {
				t.Errorf("rope_freqs present = %v, want %v", rf != nil, cfg.RopeScaling != nil)
			}
			if !m.Tied() {
				t.Errorf("tiny %s output is not tied", arch)
			}
		})
	}
}

// TestTinyTensors checks every tensor's name, shape and type against the
// llama.cpp layout each architecture has.
func TestTinyTensors(t *testing.T) {
	for _, arch := range []string{"llama", "qwen2", "qwen3"} {
		t.Run(arch, func(t *testing.T) {
			cfg, _ := Shape(arch, "tiny")
			_, f := writeTiny(t, arch, "F32", 1, nil, 2)
			e, q, kv, ffn, v := int64(cfg.Embedding), int64(cfg.Heads*cfg.HeadDim), int64(cfg.KVHeads*cfg.HeadDim), int64(cfg.FFN), int64(256+len(builtinSpecials))
			want := map[string][]int64{
				"token_embd.weight":  {e, v},
				"output_norm.weight": {e},
			}
			if cfg.RopeScaling != nil {
				want["rope_freqs.weight"] = []int64{int64(cfg.HeadDim / 2)}
			}
			for l := range cfg.Layers {
				b := fmt.Sprintf("blk.%d.", l)
				for name, dims := range map[string][]int64{
					"attn_norm.weight": {e}, "attn_q.weight": {e, q}, "attn_k.weight": {e, kv}, "attn_v.weight": {e, kv},
					"attn_output.weight": {q, e}, "ffn_norm.weight": {e}, "ffn_gate.weight": {e, ffn},
					"ffn_up.weight": {e, ffn}, "ffn_down.weight": {ffn, e},
				} {
					want[b+name] = dims
				}
				if arch == "qwen2" {
					want[b+"attn_q.bias"], want[b+"attn_k.bias"], want[b+"attn_v.bias"] = []int64{q}, []int64{kv}, []int64{kv}
				}
				if arch == "qwen3" {
					want[b+"attn_q_norm.weight"], want[b+"attn_k_norm.weight"] = []int64{int64(cfg.HeadDim)}, []int64{int64(cfg.HeadDim)}
				}
			}
			if len(f.Tensors) != len(want) {
				t.Errorf("%d tensors, want %d", len(f.Tensors), len(want))
			}
			for _, ti := range f.Tensors {
				dims, ok := want[ti.Name]
				if !ok {
					t.Errorf("unexpected tensor %q", ti.Name)
					continue
				}
				if !reflect.DeepEqual(ti.Dims, dims) || ti.Type != gguf.TypeF32 {
					t.Errorf("%s: %s %v, want F32 %v", ti.Name, ti.Type, ti.Dims, dims)
				}
			}
		})
	}
}

// TestDeterministic checks that the bytes depend on the seed and nothing
// else: not on the number of workers, nor on the run.
func TestDeterministic(t *testing.T) {
	a, _ := writeTiny(t, "qwen2", "F32", 7, nil, 1)
	b, _ := writeTiny(t, "qwen2", "F32", 7, nil, 3)
	c, fc := writeTiny(t, "qwen2", "F32", 8, nil, 2)
	if !bytes.Equal(a, b) {
		t.Error("seed 7 with 1 and 3 workers gave different files")
	}
	if bytes.Equal(a, c) {
		t.Error("seeds 7 and 8 gave the same file")
	}
	// Every random tensor must change with the seed, not just some.
	_, fa := writeTiny(t, "qwen2", "F32", 7, nil, 2)
	for i := range fa.Tensors {
		if bytes.Equal(fa.TensorData(&fa.Tensors[i]), fc.TensorData(&fc.Tensors[i])) {
			t.Errorf("tensor %s is the same for seeds 7 and 8", fa.Tensors[i].Name)
		}
	}
}

// TestWeightStatistics checks the scale of the random weights: matrices
// and biases have mean 0 and standard deviation 0.02, norm weights mean 1.
func TestWeightStatistics(t *testing.T) {
	_, f := writeTiny(t, "qwen2", "F32", 3, nil, 2)
	for _, ti := range f.Tensors {
		if ti.Name == "rope_freqs.weight" {
			continue
		}
		vals := make([]float32, ti.Elements())
		if err := gguf.Dequantize(ti.Type, f.TensorData(&ti), vals); err != nil {
			t.Fatal(err)
		}
		var sum, sq float64
		for _, v := range vals {
			sum += float64(v)
		}
		mean := sum / float64(len(vals))
		for _, v := range vals {
			sq += (float64(v) - mean) * (float64(v) - mean)
		}
		std := math.Sqrt(sq / float64(len(vals)))
		wantMean := 0.0
		if strings.HasSuffix(ti.Name, "norm.weight") {
			wantMean = 1
		}
		// Tolerances: a few standard errors of the sample mean and std.
		n := float64(len(vals))
		if math.Abs(mean-wantMean) > 5*weightStd/math.Sqrt(n) || math.Abs(std-weightStd) > 5*weightStd/math.Sqrt(2*n) {
			t.Errorf("%s: mean %.5f std %.5f over %d values, want %g and %g", ti.Name, mean, std, len(vals), wantMean, weightStd)
		}
	}
}

// TestRopeFreqs checks llama3's divisors: 1 at the highest frequencies, the
// factor at the lowest, and non-decreasing between.
func TestRopeFreqs(t *testing.T) {
	for _, headDim := range []int{32, 64, 128} {
		s := &llama31Scaling
		d := ropeFreqs(s, headDim, 500000)
		if d[0] != 1 || d[len(d)-1] != float32(s.Factor) {
			t.Errorf("head dim %d: divisors run from %g to %g, want 1 to %g", headDim, d[0], d[len(d)-1], s.Factor)
		}
		for i := 1; i < len(d); i++ {
			if d[i] < d[i-1] {
				t.Errorf("head dim %d: divisor %d = %g below divisor %d = %g", headDim, i, d[i], i-1, d[i-1])
			}
		}
	}
}

// TestTokenizerCopied checks that every tokenizer key of a real vocabulary
// is copied unchanged and that the vocabulary sets the model's vocab size.
func TestTokenizerCopied(t *testing.T) {
	vocab, err := gguf.Open(shared.Path(t, "vocab/ggml-vocab-llama-bpe.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer vocab.Close()
	// A narrow model: the 128256 embedding rows are what this test is about.
	cfg, _ := Shape("llama", "tiny")
	cfg.setDims(32, 1, 2, 1, 16, 64, true)
	_, f := writeConfig(t, cfg, "F32", 1, vocab, 0)
	n := 0
	for _, kv := range vocab.KV {
		if !strings.HasPrefix(kv.Key, "tokenizer.") {
			continue
		}
		n++
		got, err := f.Value(kv.Key)
		if err != nil || !reflect.DeepEqual(got, kv.Value) {
			t.Errorf("%s differs from the vocabulary's (%v)", kv.Key, err)
		}
	}
	if n < 5 {
		t.Errorf("only %d tokenizer keys in the vocabulary", n)
	}
	tokens, _ := vocab.Strings("tokenizer.ggml.tokens")
	if got, _ := f.Uint32("llama.vocab_size"); int(got) != len(tokens) {
		t.Errorf("llama.vocab_size = %d, want %d", got, len(tokens))
	}
	if te, ok := f.Tensor("token_embd.weight"); !ok || te.Dims[1] != int64(len(tokens)) {
		t.Errorf("token_embd.weight is not [embd, %d]", len(tokens))
	}
}

// TestBuiltinVocab checks the built-in vocabulary: one token per byte in
// GPT-2's spelling, all distinct, and the special ids in range.
func TestBuiltinVocab(t *testing.T) {
	v, err := BuiltinVocab()
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := v.Strings("tokenizer.ggml.tokens")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i, tok := range tokens {
		if seen[tok] {
			t.Errorf("token %d %q repeated", i, tok)
		}
		seen[tok] = true
	}
	// GPT-2 spells space as U+0120 'Ġ', newline as U+010A 'Ċ', 'A' as itself.
	for b, want := range map[int]string{' ': "Ġ", '\n': "Ċ", 'A': "A", 0xAD: "Ń", 0xFF: "ÿ"} {
		if tokens[b] != want {
			t.Errorf("byte %#x is token %q, want %q", b, tokens[b], want)
		}
	}
	for _, key := range []string{"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"} {
		if id, err := v.Uint32(key); err != nil || int(id) >= len(tokens) || id < 256 {
			t.Errorf("%s = %d (%v), want a special token", key, id, err)
		}
	}
}

// failingWriter accepts n bytes and then fails every write.
type failingWriter struct{ n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		k := w.n
		w.n = 0
		return k, fmt.Errorf("disk full")
	}
	w.n -= len(p)
	return len(p), nil
}

// TestWriteFailure checks that a failing destination stops the workers and
// is reported, whether it fails in the header or in the tensor data.
func TestWriteFailure(t *testing.T) {
	cfg, _ := Shape("llama", "tiny")
	for _, n := range []int{100, 3 << 20} {
		err := Write(&failingWriter{n: n}, Options{Config: cfg, FileType: "Q8_0", Seed: 1, Workers: 3})
		if err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("failing after %d bytes: error %v, want one that says disk full", n, err)
		}
	}
}
