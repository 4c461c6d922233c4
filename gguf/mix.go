package gguf

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// A mix is one of llama.cpp's file types (LLAMA_FTYPE_*, e.g. "Q4_K_M"): a
// base tensor type plus rules, from llama.cpp's llama_tensor_get_type, that
// give some tensors more bits (the output projection, attention V and
// feed-forward down on chosen layers) and fall back to 32-value block types
// for rows that are not a whole number of 256-value super-blocks. The rules
// here are those of llama.cpp without an importance matrix.

// mixInfo is one mix: its general.file_type value and its base type.
type mixInfo struct {
	fileType uint32
	base     Type
}

// mixTable lists the mixes llmserve can write; every type they produce can
// be quantized.
var mixTable = map[string]mixInfo{
	"F32":    {0, TypeF32},
	"F16":    {1, TypeF16},
	"Q4_0":   {2, TypeQ4_0},
	"Q4_1":   {3, TypeQ4_1},
	"Q8_0":   {7, TypeQ8_0},
	"Q5_0":   {8, TypeQ5_0},
	"Q5_1":   {9, TypeQ5_1},
	"Q2_K":   {10, TypeQ2_K},
	"Q3_K_S": {11, TypeQ3_K},
	"Q3_K_M": {12, TypeQ3_K},
	"Q3_K_L": {13, TypeQ3_K},
	"Q4_K_S": {14, TypeQ4_K},
	"Q4_K_M": {15, TypeQ4_K},
	"Q5_K_S": {16, TypeQ5_K},
	"Q5_K_M": {17, TypeQ5_K},
	"Q6_K":   {18, TypeQ6_K},
	"BF16":   {32, TypeBF16},
}

// MixNames returns the names of the supported mixes, sorted.
func MixNames() []string {
	names := make([]string, 0, len(mixTable))
	for n := range mixTable {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// MixFileType returns the general.file_type value llama.cpp writes for mix.
func MixFileType(mix string) (uint32, error) {
	m, ok := mixTable[mix]
	if !ok {
		return 0, unknownMix(mix)
	}
	return m.fileType, nil
}

func unknownMix(mix string) error {
	return fmt.Errorf("gguf: unknown quantization mix %q (have %s)", mix, strings.Join(MixNames(), ", "))
}

// MixModel holds the hyperparameters the mix rules look at.
type MixModel struct {
	Arch    string // general.architecture; "falcon" has rules of its own
	NLayers int    // <arch>.block_count
	NHead   int    // <arch>.attention.head_count
	NHeadKV int    // <arch>.attention.head_count_kv (0: same as NHead)
	NExpert int    // <arch>.expert_count (0 for a dense model)
}

// gqa is the number of query heads per KV head (1 when unknown).
func (m MixModel) gqa() int {
	if m.NHeadKV == 0 {
		return 1
	}
	return m.NHead / m.NHeadKV
}

// MixModelOf reads the hyperparameters the mix rules need from f's
// metadata. Head and expert counts that are absent, or not one integer
// (per-layer arrays), are left 0.
func MixModelOf(f *File) (MixModel, error) {
	arch, err := f.String("general.architecture")
	if err != nil {
		return MixModel{}, fmt.Errorf("gguf: mix model: %w", err)
	}
	m := MixModel{Arch: arch}
	n, err := f.Uint32(arch + ".block_count")
	if err != nil {
		return MixModel{}, fmt.Errorf("gguf: mix model: %w", err)
	}
	m.NLayers = int(n)
	for key, dst := range map[string]*int{
		".attention.head_count":    &m.NHead,
		".attention.head_count_kv": &m.NHeadKV,
		".expert_count":            &m.NExpert,
	} {
		if v, err := f.Uint32(arch + key); err == nil {
			*dst = int(v)
		}
	}
	return m, nil
}

// MixTensor is a tensor as the mix rules see it.
type MixTensor struct {
	Name string
	Dims []int64 // ggml order: Dims[0] is the row length
	Type Type    // its type in the source file
}

// MixPlace says where a tensor sits among its kind, for the rules that
// spread extra bits over the layers.
type MixPlace struct {
	Layer   int  // the block index from the name (blk.N.), for feed-forward down
	AttnV   int  // index of this tensor among the attention V tensors, in layer order
	NAttnV  int  // number of attention V tensors in the model
	TiedOut bool // the model has no output.weight: token_embd.weight is the output projection
}

// MixTensorTypes returns the type each tensor gets in mix, as llama.cpp's
// quantizer assigns it: tensors that are not quantized (1-D tensors such as
// norms and biases, norm weights, position embeddings...) keep their type;
// the others get the mix's base type, adjusted by the mix rules. The result
// is parallel to tensors.
func MixTensorTypes(mix string, model MixModel, tensors []MixTensor) ([]Type, error) {
	places := make([]MixPlace, len(tensors))
	var attnV []int // indices of attention V tensors
	tied := true
	for i, t := range tensors {
		places[i].Layer = layerOf(t.Name)
		switch mixCategoryOf(t.Name) {
		case catOutput:
			tied = false
		case catAttnV, catAttnQKV, catAttnKVB:
			attnV = append(attnV, i)
		}
	}
	sort.SliceStable(attnV, func(a, b int) bool { return places[attnV[a]].Layer < places[attnV[b]].Layer })
	for rank, i := range attnV {
		places[i].AttnV = rank
	}
	types := make([]Type, len(tensors))
	for i, t := range tensors {
		places[i].NAttnV = len(attnV)
		places[i].TiedOut = tied
		typ, err := MixTensorType(mix, model, t, places[i])
		if err != nil {
			return nil, err
		}
		types[i] = typ
	}
	return types, nil
}

// MixTensorType returns the type one tensor gets in mix (see
// MixTensorTypes, which computes the places of a whole model).
func MixTensorType(mix string, model MixModel, t MixTensor, place MixPlace) (Type, error) {
	m, ok := mixTable[mix]
	if !ok {
		return 0, unknownMix(mix)
	}
	if !quantizable(t) {
		return t.Type, nil
	}
	if m.base.BlockSize() == 1 { // F32, F16, BF16: no rules
		return m.base, nil
	}
	typ := mixRule(mix, m.base, model, t, place)
	return fallbackType(t, typ)
}

// mixRule applies llama.cpp's per-category rules to a quantizable tensor.
func mixRule(mix string, base Type, model MixModel, t MixTensor, p MixPlace) Type {
	cat := mixCategoryOf(t.Name)
	falcon := model.Arch == "falcon"
	moreBits := func(i, n int) bool { return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2 }
	switch {
	case cat == catOutput || (p.TiedOut && cat == catTokenEmbd):
		if falcon || t.Dims[0]%int64(base.BlockSize()) != 0 {
			return TypeQ8_0
		}
		if base != TypeQ8_0 {
			return TypeQ6_K
		}
		return base
	case cat == catTokenEmbd:
		return base
	case cat == catAttnV || cat == catAttnQKV || cat == catAttnKVB:
		typ := base
		switch {
		case mix == "Q2_K":
			typ = TypeQ3_K
			if model.gqa() >= 4 {
				typ = TypeQ4_K
			}
		case mix == "Q3_K_M":
			typ = TypeQ4_K
			if p.AttnV < 2 {
				typ = TypeQ5_K
			}
		case mix == "Q3_K_L":
			typ = TypeQ5_K
		case (mix == "Q4_K_M" || mix == "Q5_K_M") && moreBits(p.AttnV, p.NAttnV):
			typ = TypeQ6_K
		case mix == "Q4_K_S" && p.AttnV < 4:
			typ = TypeQ5_K
		}
		// llama.cpp's 70B rule: 8 query heads share each V head there.
		if model.Arch == "llama" && model.NLayers == 80 && model.NHead != model.NHeadKV &&
			(typ == TypeQ3_K || typ == TypeQ4_K) {
			typ = TypeQ5_K
		}
		if model.NExpert == 8 {
			typ = TypeQ8_0
		}
		return typ
	case cat == catAttnK:
		if model.NExpert == 8 {
			return TypeQ8_0
		}
	case cat == catFFNDown:
		i, n := p.Layer, model.NLayers
		switch {
		case mix == "Q2_K":
			return TypeQ3_K
		case mix == "Q3_K_M":
			if i < n/16 {
				return TypeQ5_K
			}
			if !falcon || moreBits(i, n) {
				return TypeQ4_K
			}
			return TypeQ3_K
		case mix == "Q3_K_L":
			if falcon {
				return TypeQ4_K
			}
			return TypeQ5_K
		case mix == "Q4_K_M":
			if falcon {
				switch {
				case i < n/16:
					return TypeQ6_K
				case moreBits(i, n):
					return TypeQ5_K
				}
				return TypeQ4_K
			}
			if moreBits(i, n) {
				return TypeQ6_K
			}
		case mix == "Q5_K_M" && moreBits(i, n):
			return TypeQ6_K
		case mix == "Q4_K_S" && !falcon && i < n/8:
			return TypeQ5_K
		}
	case cat == catAttnOutput:
		switch {
		case falcon:
			if mix == "Q3_K_L" {
				return TypeQ4_K
			}
		case model.NExpert == 8:
			switch mix {
			case "Q2_K", "Q3_K_S", "Q3_K_M", "Q4_K_S", "Q4_K_M":
				return TypeQ5_K
			}
		default:
			switch mix {
			case "Q2_K":
				return TypeQ3_K
			case "Q3_K_M":
				return TypeQ4_K
			case "Q3_K_L":
				return TypeQ5_K
			}
		}
	}
	return base
}

// fallbackType replaces a 256-value super-block type by a 32-value block
// type when the rows of t are not a whole number of super-blocks, and by F16
// when they are not a whole number of 32-value blocks either.
func fallbackType(t MixTensor, typ Type) (Type, error) {
	ncols := t.Dims[0]
	if ncols%int64(typ.BlockSize()) == 0 {
		return typ, nil
	}
	var fb Type
	switch typ {
	case TypeQ2_K, TypeQ3_K:
		fb = TypeQ4_0
	case TypeQ4_K:
		fb = TypeQ5_0
	case TypeQ5_K:
		fb = TypeQ5_1
	case TypeQ6_K:
		fb = TypeQ8_0
	default:
		return 0, fmt.Errorf("gguf: tensor %q: rows of %d values do not fit %s blocks of %d and %s has no fallback",
			t.Name, ncols, typ, typ.BlockSize(), typ)
	}
	if ncols%int64(fb.BlockSize()) != 0 {
		return TypeF16, nil
	}
	return fb, nil
}

// mixCategory is the role of a tensor as the mix rules see it.
type mixCategory int

const (
	catOther mixCategory = iota
	catTokenEmbd
	catOutput
	catAttnQKV
	catAttnKVB
	catAttnV
	catAttnK
	catAttnQ
	catAttnOutput
	catFFNUp
	catFFNGate
	catFFNDown
)

// mixCategoryOf classifies a tensor by name, in llama.cpp's order of tests.
func mixCategoryOf(name string) mixCategory {
	switch {
	case name == "output.weight":
		return catOutput
	case name == "token_embd.weight" || name == "per_layer_token_embd.weight":
		return catTokenEmbd
	case strings.Contains(name, "attn_qkv.weight"):
		return catAttnQKV
	case strings.Contains(name, "attn_kv_b.weight"):
		return catAttnKVB
	case strings.Contains(name, "attn_v.weight"):
		return catAttnV
	case strings.Contains(name, "attn_k.weight"):
		return catAttnK
	case strings.Contains(name, "attn_q.weight"):
		return catAttnQ
	case strings.Contains(name, "attn_output.weight"):
		return catAttnOutput
	case strings.Contains(name, "ffn_up"):
		return catFFNUp
	case strings.Contains(name, "ffn_gate"):
		return catFFNGate
	case strings.Contains(name, "ffn_down"):
		return catFFNDown
	}
	return catOther
}

// notQuantized lists name fragments of tensors llama.cpp never quantizes:
// small or sensitive weights of various architectures.
var notQuantized = []string{
	"_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel",
	"per_layer_model_proj", "ssm_conv1d", "shortconv.conv.weight",
	"indexer.k_proj.weight", "indexer.q_proj.weight",
	"time_mix_first.weight", "time_mix_w0.weight", "time_mix_w1.weight", "time_mix_w2.weight",
	"time_mix_v0.weight", "time_mix_v1.weight", "time_mix_v2.weight",
	"time_mix_a0.weight", "time_mix_a1.weight", "time_mix_a2.weight",
	"time_mix_g1.weight", "time_mix_g2.weight", "time_mix_decay_w1.weight",
	"time_mix_decay_w2.weight", "time_mix_lerp_fused.weight", "attn_rel_b.weight",
	".position_embd", "sam.pos_embd", "sam.neck.", "sam.net_", ".rel_pos",
	".patch_embd", ".patch_merger", "a.rvq.codebook", "mm.a.code_embd",
}

// quantizable reports whether llama.cpp's quantizer converts t at all: a
// weight matrix (at least 2 dimensions larger than 1) that is not a norm,
// a position or token-type embedding, or one of the small special weights.
func quantizable(t MixTensor) bool {
	if nDims(t.Dims) < 2 || !strings.HasSuffix(t.Name, "weight") {
		return false
	}
	if t.Name == "position_embd.weight" || t.Name == "token_types.weight" {
		return false
	}
	for _, s := range notQuantized {
		if strings.Contains(t.Name, s) {
			return false
		}
	}
	return true
}

// nDims counts dimensions like ggml_n_dims: trailing dimensions of size 1
// do not count, and a scalar has one.
func nDims(dims []int64) int {
	for i := len(dims) - 1; i >= 1; i-- {
		if dims[i] > 1 {
			return i + 1
		}
	}
	return 1
}

// layerOf returns N for a name "blk.N....", or -1.
func layerOf(name string) int {
	rest, ok := strings.CutPrefix(name, "blk.")
	if !ok {
		return -1
	}
	num, _, ok := strings.Cut(rest, ".")
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(num)
	if err != nil {
		return -1
	}
	return n
}
