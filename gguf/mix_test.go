package gguf

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"llmserve/internal/shared"
)

// TestMixMatchesLlamaCpp assigns the types of every quantized golden model
// from the tensors of its F32 source and compares them with the types
// llama.cpp's quantizer chose.
func TestMixMatchesLlamaCpp(t *testing.T) {
	checked := 0
	for _, p := range shared.Glob(t, "golden/tiny-*.gguf") {
		name := strings.TrimSuffix(filepath.Base(p), ".gguf")
		rest := strings.TrimPrefix(name, "tiny-")
		arch, mix, _ := strings.Cut(rest, "-")
		if mix == "F32" || strings.HasPrefix(mix, "tied") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			src := openGolden(t, "golden/tiny-"+arch+"-F32.gguf")
			dst := openGolden(t, "golden/"+name+".gguf")
			ft, err := dst.Uint32("general.file_type")
			if err != nil {
				t.Fatal(err)
			}
			if want, err := MixFileType(mix); err != nil || want != ft {
				t.Errorf("MixFileType(%q) = %d, %v; the file says %d", mix, want, err, ft)
			}
			model, err := MixModelOf(src)
			if err != nil {
				t.Fatal(err)
			}
			tensors := mixTensorsOf(src)
			got, err := MixTensorTypes(mix, model, tensors)
			if err != nil {
				t.Fatal(err)
			}
			for i, mt := range tensors {
				ti, ok := dst.Tensor(mt.Name)
				if !ok {
					t.Fatalf("%s missing from %s", mt.Name, name)
				}
				if got[i] != ti.Type {
					t.Errorf("%s: got %s, llama.cpp chose %s", mt.Name, got[i], ti.Type)
				}
			}
			checked++
		})
	}
	if checked < 13 {
		t.Errorf("checked %d quantized models, want all 13", checked)
	}
}

func mixTensorsOf(f *File) []MixTensor {
	ts := make([]MixTensor, len(f.Tensors))
	for i, ti := range f.Tensors {
		ts[i] = MixTensor{Name: ti.Name, Dims: ti.Dims, Type: ti.Type}
	}
	return ts
}

// syntheticLlama lists the tensors of a llama-style model with n layers,
// embedding width embd and vocabulary vocab, with or without output.weight.
func syntheticLlama(n int, embd, vocab int64, output bool) []MixTensor {
	ts := []MixTensor{{"token_embd.weight", []int64{embd, vocab}, TypeF32}}
	for i := range n {
		p := fmt.Sprintf("blk.%d.", i)
		ts = append(ts,
			MixTensor{p + "attn_norm.weight", []int64{embd}, TypeF32},
			MixTensor{p + "attn_q.weight", []int64{embd, embd}, TypeF32},
			MixTensor{p + "attn_k.weight", []int64{embd, embd / 4}, TypeF32},
			MixTensor{p + "attn_v.weight", []int64{embd, embd / 4}, TypeF32},
			MixTensor{p + "attn_q.bias", []int64{embd}, TypeF32},
			MixTensor{p + "attn_output.weight", []int64{embd, embd}, TypeF32},
			MixTensor{p + "ffn_norm.weight", []int64{embd}, TypeF32},
			MixTensor{p + "ffn_gate.weight", []int64{embd, 4 * embd}, TypeF32},
			MixTensor{p + "ffn_up.weight", []int64{embd, 4 * embd}, TypeF32},
			MixTensor{p + "ffn_down.weight", []int64{4 * embd, embd}, TypeF32},
		)
	}
	ts = append(ts, MixTensor{"output_norm.weight", []int64{embd}, TypeF32})
	if output {
		ts = append(ts, MixTensor{"output.weight", []int64{embd, vocab}, TypeF32})
	}
	return ts
}

func typeOfName(t *testing.T, tensors []MixTensor, types []Type, name string) Type {
	t.Helper()
	for i, mt := range tensors {
		if mt.Name == name {
			return types[i]
		}
	}
	t.Fatalf("no tensor %s", name)
	return 0
}

// TestMixLayers checks the layers that get Q6_K attention V and
// feed-forward down in the _M mixes of a 32-layer model against
// use_more_bits written out: layers 0-3, 28-31 and every third from 6.
func TestMixLayers(t *testing.T) {
	const n = 32
	more := map[int]bool{0: true, 1: true, 2: true, 3: true, 28: true, 29: true, 30: true, 31: true}
	for i := 6; i < 28; i += 3 {
		more[i] = true
	}
	tensors := syntheticLlama(n, 4096, 32000, true)
	for _, tc := range []struct {
		mix        string
		base, more Type
	}{
		{"Q4_K_M", TypeQ4_K, TypeQ6_K},
		{"Q5_K_M", TypeQ5_K, TypeQ6_K},
	} {
		types, err := MixTensorTypes(tc.mix, MixModel{Arch: "llama", NLayers: n, NHead: 32, NHeadKV: 8}, tensors)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			want := tc.base
			if more[i] {
				want = tc.more
			}
			for _, kind := range []string{"attn_v", "ffn_down"} {
				name := fmt.Sprintf("blk.%d.%s.weight", i, kind)
				if got := typeOfName(t, tensors, types, name); got != want {
					t.Errorf("%s %s = %s, want %s", tc.mix, name, got, want)
				}
			}
			for _, kind := range []string{"attn_q", "attn_k", "attn_output", "ffn_gate", "ffn_up"} {
				name := fmt.Sprintf("blk.%d.%s.weight", i, kind)
				if got := typeOfName(t, tensors, types, name); got != tc.base {
					t.Errorf("%s %s = %s, want %s", tc.mix, name, got, tc.base)
				}
			}
			for _, name := range []string{fmt.Sprintf("blk.%d.attn_norm.weight", i), fmt.Sprintf("blk.%d.attn_q.bias", i)} {
				if got := typeOfName(t, tensors, types, name); got != TypeF32 {
					t.Errorf("%s %s = %s, want F32", tc.mix, name, got)
				}
			}
		}
		if got := typeOfName(t, tensors, types, "output.weight"); got != TypeQ6_K {
			t.Errorf("%s output.weight = %s, want Q6_K", tc.mix, got)
		}
		if got := typeOfName(t, tensors, types, "token_embd.weight"); got != tc.base {
			t.Errorf("%s token_embd.weight = %s, want %s", tc.mix, got, tc.base)
		}
	}
}

// TestMixSpecialTensors covers tied embeddings, row-length fallbacks and
// the plain mixes.
func TestMixSpecialTensors(t *testing.T) {
	model := MixModel{Arch: "llama", NLayers: 1, NHead: 4, NHeadKV: 2}
	tests := []struct {
		name   string
		mix    string
		output bool
		embd   int64
		tensor string
		want   Type
	}{
		{"tied embeddings become the Q6_K output", "Q4_K_M", false, 256, "token_embd.weight", TypeQ6_K},
		{"tied embeddings in Q8_0 stay Q8_0", "Q8_0", false, 256, "token_embd.weight", TypeQ8_0},
		{"untied embeddings keep the base type", "Q4_0", true, 256, "token_embd.weight", TypeQ4_0},
		{"output of Q4_0 is Q6_K", "Q4_0", true, 256, "output.weight", TypeQ6_K},
		{"output with odd rows is Q8_0", "Q4_K_M", true, 288, "output.weight", TypeQ8_0},
		{"Q4_K falls back to Q5_0", "Q4_K_M", true, 288, "blk.0.attn_q.weight", TypeQ5_0},
		{"Q5_K falls back to Q5_1", "Q5_K_M", true, 288, "blk.0.attn_q.weight", TypeQ5_1},
		{"Q6_K falls back to Q8_0", "Q6_K", true, 288, "blk.0.attn_q.weight", TypeQ8_0},
		{"Q6_K attn_v falls back to Q8_0", "Q4_K_M", true, 288, "blk.0.attn_v.weight", TypeQ8_0},
		{"F16 mix", "F16", true, 256, "blk.0.ffn_up.weight", TypeF16},
		{"BF16 mix", "BF16", true, 256, "output.weight", TypeBF16},
		{"norms stay F32 in F16", "F16", true, 256, "blk.0.ffn_norm.weight", TypeF32},
		{"plain Q6_K", "Q6_K", true, 256, "blk.0.ffn_gate.weight", TypeQ6_K},
		{"plain Q8_0 output", "Q8_0", true, 256, "output.weight", TypeQ8_0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tensors := syntheticLlama(1, tc.embd, 288, tc.output)
			types, err := MixTensorTypes(tc.mix, model, tensors)
			if err != nil {
				t.Fatal(err)
			}
			if got := typeOfName(t, tensors, types, tc.tensor); got != tc.want {
				t.Errorf("%s in %s = %s, want %s", tc.tensor, tc.mix, got, tc.want)
			}
		})
	}
}

// TestMixF16Fallback: a row length that is not a multiple of 32 either
// makes a k-quant tensor F16, as in llama.cpp.
func TestMixF16Fallback(t *testing.T) {
	mt := MixTensor{Name: "blk.0.attn_q.weight", Dims: []int64{200, 200}, Type: TypeF32}
	got, err := MixTensorType("Q4_K_M", MixModel{Arch: "llama", NLayers: 1}, mt, MixPlace{NAttnV: 1})
	if err != nil || got != TypeF16 {
		t.Errorf("got %s, %v; want F16", got, err)
	}
}

func TestMixErrors(t *testing.T) {
	model := MixModel{Arch: "llama", NLayers: 1}
	if _, err := MixTensorTypes("Q7_K", model, syntheticLlama(1, 256, 288, true)); err == nil {
		t.Error("unknown mix: no error")
	}
	// Q4_0 has no fallback for rows that are not a whole number of blocks.
	if _, err := MixTensorTypes("Q4_0", model, syntheticLlama(1, 200, 288, true)); err == nil {
		t.Error("Q4_0 with rows of 200: no error")
	}
}
