package model_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"testing"

	"llmserve/gguf"
	"llmserve/model/synth"
)

// expect is what a corpus file must do.
type expect int

const (
	mustFail  expect = iota // load to a one-line error
	mustServe               // load and generate
	either                  // one or the other, never a panic
)

// corpusFile is one malformed (or harmlessly unusual) model file.
type corpusFile struct {
	class, name string
	data        []byte
	want        expect
}

// corpus builds the malformed-model corpus from tiny synthetic models.
type corpus struct {
	t     *testing.T
	files []corpusFile
}

func (c *corpus) add(class, name string, want expect, data []byte) {
	c.files = append(c.files, corpusFile{class, name, data, want})
}

// edit encodes a copy of base changed by fn.
func (c *corpus) edit(class, name string, want expect, base *synth.Raw, fn func(r *synth.Raw)) {
	r := base.Clone()
	fn(r)
	data, err := r.Encode()
	if err != nil {
		c.t.Fatalf("%s/%s: %v", class, name, err)
	}
	c.add(class, name, want, data)
}

func u32(v uint32) gguf.Value  { return gguf.Value{Type: gguf.ValueUint32, V: v} }
func f32(v float32) gguf.Value { return gguf.Value{Type: gguf.ValueFloat32, V: v} }
func str(v string) gguf.Value  { return gguf.Value{Type: gguf.ValueString, V: v} }
func i64(v int64) gguf.Value   { return gguf.Value{Type: gguf.ValueInt64, V: v} }
func arr(t gguf.ValueType, e any) gguf.Value {
	return gguf.Value{Type: gguf.ValueArray, V: gguf.Array{Type: t, Elems: e}}
}

// patchAfter overwrites the uint64 that starts skip bytes after the first
// occurrence of marker in data (a key or tensor name as the file spells it).
func patchAfter(t *testing.T, data []byte, marker string, skip int, v uint64) []byte {
	t.Helper()
	i := bytes.Index(data, []byte(marker))
	if i < 0 {
		t.Fatalf("%q not in the file", marker)
	}
	out := slices.Clone(data)
	binary.LittleEndian.PutUint64(out[i+len(marker)+skip:], v)
	return out
}

func buildCorpus(t *testing.T) []corpusFile {
	c := &corpus{t: t}
	llama, qwen2, qwen3 := tinyRaw(t, "llama"), tinyRaw(t, "qwen2"), tinyRaw(t, "qwen3")
	good, err := llama.Encode()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []struct {
		name string
		r    *synth.Raw
	}{{"llama", llama}, {"qwen2", qwen2}, {"qwen3", qwen3}} {
		c.edit("control", b.name, mustServe, b.r, func(*synth.Raw) {})
	}

	// Truncations: every 97th byte of the header and metadata, then a
	// spread of offsets through the tensor data.
	f, err := gguf.Parse(good)
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < int(f.DataOffset); n += int(f.DataOffset) / 40 {
		c.add("truncated", fmt.Sprintf("at %d", n), mustFail, good[:n])
	}
	for _, frac := range []int{1, 10, 25, 50, 75, 90, 99} {
		n := int(f.DataOffset) + (len(good)-int(f.DataOffset))*frac/100
		c.add("truncated", fmt.Sprintf("data at %d%%", frac), mustFail, good[:n])
	}
	c.add("truncated", "last byte", mustFail, good[:len(good)-1])

	// Hyperparameters: zero, huge, inconsistent, mistyped, absent.
	for _, key := range []string{"embedding_length", "block_count", "attention.head_count", "feed_forward_length",
		"attention.head_count_kv", "context_length", "attention.key_length", "rope.dimension_count"} {
		k := "llama." + key
		c.edit("hyperparameter", key+" = 0", mustFail, llama, func(r *synth.Raw) { r.Set(k, u32(0)) })
		c.edit("hyperparameter", key+" = 2^32-1", mustFail, llama, func(r *synth.Raw) { r.Set(k, u32(math.MaxUint32)) })
		three := mustFail
		if key == "context_length" {
			three = mustServe // a trained context of 3 is short, not wrong
		}
		c.edit("hyperparameter", key+" = 3", three, llama, func(r *synth.Raw) { r.Set(k, u32(3)) })
		c.edit("hyperparameter", key+" is a string", mustFail, llama, func(r *synth.Raw) { r.Set(k, str("32")) })
		c.edit("hyperparameter", key+" = -1", mustFail, llama, func(r *synth.Raw) { r.Set(k, i64(-1)) })
	}
	c.edit("hyperparameter", "key_length 65536 with 8 KV heads", mustFail, llama, func(r *synth.Raw) {
		r.Set("llama.attention.key_length", u32(65536))
		r.Set("llama.attention.head_count_kv", u32(8))
	})
	c.edit("hyperparameter", "value_length differs", mustFail, llama, func(r *synth.Raw) { r.Set("llama.attention.value_length", u32(16)) })
	c.edit("hyperparameter", "vocab_size differs", mustFail, llama, func(r *synth.Raw) { r.Set("llama.vocab_size", u32(1000)) })
	for _, key := range []string{"embedding_length", "block_count", "attention.head_count", "feed_forward_length"} {
		c.edit("hyperparameter", key+" absent", mustFail, llama, func(r *synth.Raw) { r.Delete("llama." + key) })
	}
	c.edit("hyperparameter", "optional keys absent", mustServe, llama, func(r *synth.Raw) {
		for _, k := range []string{"context_length", "rope.dimension_count", "rope.freq_base", "vocab_size"} {
			r.Delete("llama." + k)
		}
	})
	c.edit("hyperparameter", "context 2^24", mustServe, llama, func(r *synth.Raw) { r.Set("llama.context_length", u32(1<<24)) })
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, v := range []float32{nan, inf, -inf, 0, -1, 1e30} {
		c.edit("float hyperparameter", fmt.Sprintf("rms epsilon %g", v), mustFail, llama, func(r *synth.Raw) {
			r.Set("llama.attention.layer_norm_rms_epsilon", f32(v))
		})
		c.edit("float hyperparameter", fmt.Sprintf("rope base %g", v), mustFail, llama, func(r *synth.Raw) { r.Set("llama.rope.freq_base", f32(v)) })
		c.edit("float hyperparameter", fmt.Sprintf("linear rope factor %g", v), mustFail, llama, func(r *synth.Raw) {
			r.Set("llama.rope.scaling.type", str("linear"))
			r.Set("llama.rope.scaling.factor", f32(v))
		})
	}
	c.edit("float hyperparameter", "rms epsilon absent", mustFail, llama, func(r *synth.Raw) { r.Delete("llama.attention.layer_norm_rms_epsilon") })
	c.edit("float hyperparameter", "rope scaling yarn", mustFail, llama, func(r *synth.Raw) { r.Set("llama.rope.scaling.type", str("yarn")) })
	c.edit("float hyperparameter", "linear rope factor 4", mustServe, llama, func(r *synth.Raw) {
		r.Set("llama.rope.scaling.type", str("linear"))
		r.Set("llama.rope.scaling.factor", f32(4))
	})

	// Overflowing dimensions.
	for _, dims := range [][]uint64{{32, 1 << 56}, {1 << 32, 1 << 32}, {1 << 62, 2}, {32, 1 << 58, 4}, {math.MaxUint64, 1}} {
		c.edit("overflowing dims", fmt.Sprintf("token_embd %v", dims), mustFail, llama, func(r *synth.Raw) { r.Tensor("token_embd.weight").Dims = dims })
	}
	c.edit("overflowing dims", "attn_q [32, 2^57]", mustFail, llama, func(r *synth.Raw) { r.Tensor("blk.0.attn_q.weight").Dims = []uint64{32, 1 << 57} })

	// Wrong tensor types (vectors must be F32; matrices a type the engines multiply).
	for _, tc := range []struct {
		name string
		typ  gguf.Type
	}{{"output_norm.weight", gguf.TypeF16}, {"blk.0.attn_norm.weight", gguf.TypeQ8_0}, {"blk.1.ffn_norm.weight", gguf.TypeI32},
		{"blk.0.attn_q.weight", gguf.TypeQ8_K}, {"blk.0.ffn_up.weight", gguf.TypeIQ2_XXS}, {"token_embd.weight", gguf.TypeI8},
		{"blk.1.attn_v.weight", gguf.TypeF64}, {"blk.0.attn_k.weight", gguf.Type(200)}, {"rope_freqs.weight", gguf.TypeF16},
	} {
		c.edit("tensor type", tc.name+" "+tc.typ.String(), mustFail, llama, func(r *synth.Raw) { r.Tensor(tc.name).Type = tc.typ })
	}
	// F32 bytes read as F16 fit in the first half of the tensor's data:
	// the file is consistent, its values are noise (NaN among them).
	c.edit("tensor type", "ffn_down F16 over F32 bytes", either, llama, func(r *synth.Raw) { r.Tensor("blk.0.ffn_down.weight").Type = gguf.TypeF16 })

	// Missing and duplicate tensors.
	for _, name := range []string{"token_embd.weight", "output_norm.weight", "blk.0.attn_q.weight", "blk.1.ffn_down.weight", "blk.1.attn_norm.weight"} {
		c.edit("missing tensor", name, mustFail, llama, func(r *synth.Raw) {
			r.Tensors = slices.DeleteFunc(r.Tensors, func(t synth.RawTensor) bool { return t.Name == name })
		})
	}
	c.edit("missing tensor", "qwen2 attn_k.bias", mustFail, qwen2, func(r *synth.Raw) {
		r.Tensors = slices.DeleteFunc(r.Tensors, func(t synth.RawTensor) bool { return t.Name == "blk.0.attn_k.bias" })
	})
	c.edit("missing tensor", "qwen3 attn_q_norm", mustFail, qwen3, func(r *synth.Raw) {
		r.Tensors = slices.DeleteFunc(r.Tensors, func(t synth.RawTensor) bool { return t.Name == "blk.1.attn_q_norm.weight" })
	})
	c.edit("missing tensor", "no tensors", mustFail, llama, func(r *synth.Raw) { r.Tensors = nil; r.Data = nil })
	c.edit("missing tensor", "block_count 1000", mustFail, llama, func(r *synth.Raw) { r.Set("llama.block_count", u32(1000)) })
	for _, name := range []string{"token_embd.weight", "blk.0.attn_k.weight"} {
		c.edit("duplicate tensor", name, mustFail, llama, func(r *synth.Raw) { r.Tensors = append(r.Tensors, *r.Tensor(name)) })
	}
	c.edit("duplicate tensor", "duplicate key", mustFail, llama, func(r *synth.Raw) { r.KV = append(r.KV, r.KV[0]) })

	// Wrong shapes.
	for _, tc := range []struct {
		name string
		dims []uint64
	}{{"token_embd.weight", []uint64{16, 261}}, {"token_embd.weight", []uint64{32}}, {"blk.0.attn_q.weight", []uint64{32, 16}},
		{"blk.0.attn_k.weight", []uint64{16, 32}}, {"blk.1.ffn_gate.weight", []uint64{32, 32}}, {"output_norm.weight", []uint64{16}},
		{"blk.0.attn_norm.weight", []uint64{32, 1}}, {"rope_freqs.weight", []uint64{8}}, {"blk.0.attn_output.weight", []uint64{32, 32, 1}}} {
		c.edit("wrong shape", fmt.Sprintf("%s %v", tc.name, tc.dims), mustFail, llama, func(r *synth.Raw) { r.Tensor(tc.name).Dims = tc.dims })
	}

	// Tensor data overlapping, outside the file, misaligned.
	c.edit("data placement", "two tensors share data", mustFail, llama, func(r *synth.Raw) {
		r.Tensor("blk.0.attn_k.weight").Offset = r.Tensor("blk.0.attn_q.weight").Offset
	})
	c.edit("data placement", "overlap by one block", mustFail, llama, func(r *synth.Raw) { r.Tensor("blk.0.attn_k.weight").Offset += 32 })
	c.edit("data placement", "offset past the end", mustFail, llama, func(r *synth.Raw) { r.Tensor("output_norm.weight").Offset = uint64(len(r.Data)) + 64 })
	c.edit("data placement", "offset 2^62", mustFail, llama, func(r *synth.Raw) { r.Tensor("output_norm.weight").Offset = 1 << 62 })
	c.edit("data placement", "offset 2^64-32", mustFail, llama, func(r *synth.Raw) { r.Tensor("output_norm.weight").Offset = math.MaxUint64 - 31 })
	c.edit("data placement", "last tensor runs past the end", mustFail, llama, func(r *synth.Raw) { r.Data = r.Data[:len(r.Data)-4] })
	c.edit("data placement", "misaligned offset", mustFail, llama, func(r *synth.Raw) { r.Tensor("blk.1.attn_q.weight").Offset += 4 })
	c.edit("alignment", "alignment 0", mustFail, llama, func(r *synth.Raw) { r.Set("general.alignment", u32(0)) })
	c.edit("alignment", "alignment 24", mustFail, llama, func(r *synth.Raw) { r.Set("general.alignment", u32(24)) })
	c.edit("alignment", "alignment 2^30", mustFail, llama, func(r *synth.Raw) { r.Set("general.alignment", u32(1<<30)) })
	c.edit("alignment", "alignment is a string", mustFail, llama, func(r *synth.Raw) { r.Set("general.alignment", str("32")) })
	c.edit("alignment", "alignment 64, offsets of 32", mustFail, llama, func(r *synth.Raw) { r.Set("general.alignment", u32(64)); r.Alignment = 64 })
	c.edit("alignment", "alignment 8", mustServe, llama, func(r *synth.Raw) { r.Set("general.alignment", u32(8)); r.Alignment = 8 })

	// Absurd counts and lengths, patched into the encoded bytes.
	for _, n := range []uint64{1 << 20, 1 << 40, math.MaxUint64} {
		c.add("absurd length", fmt.Sprintf("tokens count %d", n), mustFail, patchAfter(t, good, "tokenizer.ggml.tokens", 8, n))
		c.add("absurd length", fmt.Sprintf("merges count %d", n), mustFail, patchAfter(t, good, "tokenizer.ggml.merges", 8, n))
		c.add("absurd length", fmt.Sprintf("name length %d", n), mustFail, patchAfter(t, good, "general.name", 4, n))
		c.add("absurd length", fmt.Sprintf("tensor name length %d", n), mustFail, patchAfter(t, good, "token_embd.weight", -8-len("token_embd.weight"), n))
		c.add("absurd length", fmt.Sprintf("tensor count %d", n), mustFail, patchAfter(t, good, "GGUF", 4, n))
		c.add("absurd length", fmt.Sprintf("metadata count %d", n), mustFail, patchAfter(t, good, "GGUF", 12, n))
	}

	// Tokenizer metadata against the model.
	tokens := func(r *synth.Raw) []string {
		v := r.KV[r.Index("tokenizer.ggml.tokens")].Value.V.(gguf.Array)
		return v.Elems.([]string)
	}
	c.edit("tokenizer", "more tokens than embedding rows", mustFail, llama, func(r *synth.Raw) {
		r.Set("tokenizer.ggml.tokens", arr(gguf.ValueString, append(slices.Clone(tokens(r)), "extra")))
		r.Set("tokenizer.ggml.token_type", arr(gguf.ValueInt32, make([]int32, len(tokens(r))+1)))
	})
	c.edit("tokenizer", "fewer tokens than embedding rows", mustServe, llama, func(r *synth.Raw) {
		n := len(tokens(r)) - 1
		r.Set("tokenizer.ggml.tokens", arr(gguf.ValueString, slices.Clone(tokens(r)[:n])))
		r.Set("tokenizer.ggml.token_type", arr(gguf.ValueInt32, slices.Repeat([]int32{1}, n)))
		r.Set("tokenizer.ggml.eos_token_id", u32(0))
	})
	// Like llama.cpp, an out-of-range special id falls back to the default.
	c.edit("tokenizer", "bos id out of range", mustServe, llama, func(r *synth.Raw) { r.Set("tokenizer.ggml.bos_token_id", u32(100000)) })
	c.edit("tokenizer", "eos id out of range", mustServe, llama, func(r *synth.Raw) { r.Set("tokenizer.ggml.eos_token_id", u32(1<<31)) })
	c.edit("tokenizer", "bos id negative", mustFail, llama, func(r *synth.Raw) { r.Set("tokenizer.ggml.bos_token_id", i64(-5)) })
	c.edit("tokenizer", "token types too short", mustFail, llama, func(r *synth.Raw) { r.Set("tokenizer.ggml.token_type", arr(gguf.ValueInt32, []int32{1, 1})) })
	c.edit("tokenizer", "token types are strings", mustFail, llama, func(r *synth.Raw) { r.Set("tokenizer.ggml.token_type", arr(gguf.ValueString, []string{"x"})) })
	c.edit("tokenizer", "scores too short", mustFail, llama, func(r *synth.Raw) { r.Set("tokenizer.ggml.scores", arr(gguf.ValueFloat32, []float32{0})) })
	c.edit("tokenizer", "scores are bools", mustFail, llama, func(r *synth.Raw) { r.Set("tokenizer.ggml.scores", arr(gguf.ValueBool, []bool{true})) })
	c.edit("tokenizer", "tokens are integers", mustFail, llama, func(r *synth.Raw) { r.Set("tokenizer.ggml.tokens", arr(gguf.ValueInt32, []int32{1, 2})) })
	c.edit("tokenizer", "no tokens", mustFail, llama, func(r *synth.Raw) { r.Set("tokenizer.ggml.tokens", arr(gguf.ValueString, []string{})) })
	c.edit("tokenizer", "duplicate token", mustFail, llama, func(r *synth.Raw) {
		t := slices.Clone(tokens(r))
		t[5] = t[6]
		r.Set("tokenizer.ggml.tokens", arr(gguf.ValueString, t))
	})
	c.edit("tokenizer", "unknown tokenizer model", mustFail, llama, func(r *synth.Raw) { r.Set("tokenizer.ggml.model", str("wordpiece")) })
	c.edit("tokenizer", "unknown pre-tokenizer", mustFail, llama, func(r *synth.Raw) { r.Set("tokenizer.ggml.pre", str("no-such-pre")) })
	c.edit("tokenizer", "merges absent", mustFail, llama, func(r *synth.Raw) { r.Delete("tokenizer.ggml.merges") })
	c.edit("tokenizer", "merge of unknown tokens", mustServe, llama, func(r *synth.Raw) {
		r.Set("tokenizer.ggml.merges", arr(gguf.ValueString, []string{"zz qq", "H e", "nospace", " "}))
	})
	c.edit("tokenizer", "add_bos is an int", mustFail, llama, func(r *synth.Raw) { r.Set("tokenizer.ggml.add_bos_token", u32(1)) })
	c.edit("tokenizer", "tokenizer absent", mustServe, llama, func(r *synth.Raw) {
		r.KV = slices.DeleteFunc(r.KV, func(kv gguf.KV) bool { return len(kv.Key) > 10 && kv.Key[:10] == "tokenizer." })
	})

	// Architecture and rope_freqs values.
	c.edit("architecture", "unknown architecture", mustFail, llama, func(r *synth.Raw) { r.Set("general.architecture", str("gemma9")) })
	c.edit("architecture", "architecture is an int", mustFail, llama, func(r *synth.Raw) { r.Set("general.architecture", u32(1)) })
	c.edit("architecture", "architecture absent", mustFail, llama, func(r *synth.Raw) { r.Delete("general.architecture") })
	c.edit("architecture", "version 1", mustFail, llama, func(r *synth.Raw) { r.Version = 1 })
	for _, v := range []float32{nan, 0, -2, inf} {
		c.edit("rope_freqs", fmt.Sprintf("divisor %g", v), mustFail, llama, func(r *synth.Raw) {
			rf := r.Tensor("rope_freqs.weight")
			r.Data = slices.Clone(r.Data)
			binary.LittleEndian.PutUint32(r.Data[rf.Offset+4:], math.Float32bits(v))
		})
	}
	archCases(c, nan, inf)
	return c.files
}

// archCases adds the hyperparameters and tensors of gemma2, phi3 and the
// Mixtral-style llama.
func archCases(c *corpus, nan, inf float32) {
	t := c.t
	gemma2, phi3, mixtral := tinyRaw(t, "gemma2"), tinyRaw(t, "phi3"), tinyRaw(t, "mixtral")
	for _, b := range []struct {
		name string
		r    *synth.Raw
	}{{"gemma2", gemma2}, {"phi3", phi3}, {"mixtral", mixtral}} {
		c.edit("control", b.name, mustServe, b.r, func(*synth.Raw) {})
	}
	for _, v := range []uint32{0, 5, 1 << 20} {
		c.edit("experts", fmt.Sprintf("expert_used_count %d of 4", v), mustFail, mixtral, func(r *synth.Raw) { r.Set("llama.expert_used_count", u32(v)) })
	}
	c.edit("experts", "expert_count 1<<20", mustFail, mixtral, func(r *synth.Raw) { r.Set("llama.expert_count", u32(1<<20)) })
	c.edit("experts", "expert_count 8 over 4 experts' tensors", mustFail, mixtral, func(r *synth.Raw) { r.Set("llama.expert_count", u32(8)) })
	c.edit("experts", "expert_count absent", mustFail, mixtral, func(r *synth.Raw) { r.Delete("llama.expert_count") })
	c.edit("experts", "experts on gemma2", mustFail, gemma2, func(r *synth.Raw) {
		r.Set("gemma2.expert_count", u32(4))
		r.Set("gemma2.expert_used_count", u32(2))
	})
	for _, name := range []string{"blk.1.ffn_gate_exps.weight", "blk.0.ffn_gate_inp.weight"} {
		c.edit("experts", name+" absent", mustFail, mixtral, func(r *synth.Raw) {
			r.Tensors = slices.DeleteFunc(r.Tensors, func(t synth.RawTensor) bool { return t.Name == name })
		})
	}
	c.edit("experts", "ffn_down_exps with 3 experts", mustFail, mixtral, func(r *synth.Raw) {
		d := r.Tensor("blk.0.ffn_down_exps.weight")
		d.Dims = []uint64{d.Dims[0], d.Dims[1], 3}
	})
	for _, v := range []float32{nan, inf, -1} {
		for _, key := range []string{"gemma2.attn_logit_softcapping", "gemma2.final_logit_softcapping", "gemma2.attention.scale"} {
			c.edit("soft-capping", fmt.Sprintf("%s %g", key, v), mustFail, gemma2, func(r *synth.Raw) { r.Set(key, f32(v)) })
		}
		c.edit("longrope", fmt.Sprintf("attn_factor %g", v), mustFail, phi3, func(r *synth.Raw) { r.Set("phi3.rope.scaling.attn_factor", f32(v)) })
	}
	c.edit("soft-capping", "gemma2 without soft-capping", mustServe, gemma2, func(r *synth.Raw) {
		r.Delete("gemma2.attn_logit_softcapping")
		r.Delete("gemma2.final_logit_softcapping")
	})
	c.edit("window", "sliding_window 2^32-1", mustFail, phi3, func(r *synth.Raw) { r.Set("phi3.attention.sliding_window", u32(math.MaxUint32)) })
	c.edit("window", "sliding_window 1", mustServe, gemma2, func(r *synth.Raw) { r.Set("gemma2.attention.sliding_window", u32(1)) })
	c.edit("fused", "attn_qkv without V rows", mustFail, phi3, func(r *synth.Raw) {
		q := r.Tensor("blk.0.attn_qkv.weight")
		q.Dims = []uint64{q.Dims[0], q.Dims[1] / 2}
	})
	c.edit("fused", "post_ffw_norm absent", mustFail, gemma2, func(r *synth.Raw) {
		r.Tensors = slices.DeleteFunc(r.Tensors, func(t synth.RawTensor) bool { return t.Name == "blk.1.post_ffw_norm.weight" })
	})
}

// TestMalformedModels loads every file of the corpus through model.Open and
// serves the ones that load: none may panic or allocate past allocBound,
// each must fail with one line or serve, as its case says.
func TestMalformedModels(t *testing.T) {
	files := buildCorpus(t)
	if len(files) < 100 {
		t.Fatalf("corpus has %d files, want at least 100", len(files))
	}
	dir := t.TempDir()
	perClass := map[string]int{}
	var maxAlloc uint64
	for i, cf := range files {
		perClass[cf.class]++
		path := writeFile(t, dir, fmt.Sprintf("%03d.gguf", i), cf.data)
		label := cf.class + "/" + cf.name
		o := openAndServe(t, path, label, cf.want == mustServe)
		maxAlloc = max(maxAlloc, o.alloc)
		switch {
		case o.panicked != "":
			t.Errorf("%s: panic: %s", label, o.panicked)
		case o.alloc > allocBound:
			t.Errorf("%s: allocated %d bytes, bound %d", label, o.alloc, allocBound)
		case o.loadErr != nil && !oneLine(o.loadErr):
			t.Errorf("%s: error is not one line: %q", label, o.loadErr)
		case o.loadErr != nil && cf.want == mustServe:
			t.Errorf("%s: refused: %v", label, o.loadErr)
		case o.loadErr == nil && cf.want == mustFail:
			t.Errorf("%s: loaded and served, want an error", label)
		}
		if testing.Verbose() {
			t.Logf("%-20s %-45s %v", cf.class, cf.name, o.loadErr)
		}
	}
	classes := make([]string, 0, len(perClass))
	for c := range perClass {
		classes = append(classes, c)
	}
	sort.Strings(classes)
	for _, c := range classes {
		t.Logf("class %-20s %3d files", c, perClass[c])
	}
	t.Logf("%d files; the most one allocated: %d bytes (bound %d)", len(files), maxAlloc, allocBound)
}
