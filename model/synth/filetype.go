package synth

import (
	"fmt"
	"strings"

	"llmserve/gguf"
)

// fileType is a llama.cpp model file type (llama_ftype): the value of
// general.file_type and the tensor type most weights get.
type fileType struct {
	name  string    // llama.cpp's spelling, e.g. Q4_K_M
	id    uint32    // general.file_type
	base  gguf.Type // the type of 2-D weights before the mix rules
	mixed bool      // quantized: llama.cpp's per-tensor rules apply
}

// fileTypes are the file types synth writes.
var fileTypes = []fileType{
	{"F32", 0, gguf.TypeF32, false},
	{"F16", 1, gguf.TypeF16, false},
	{"Q4_0", 2, gguf.TypeQ4_0, true},
	{"Q8_0", 7, gguf.TypeQ8_0, true},
	{"Q4_K_M", 15, gguf.TypeQ4_K, true},
	{"Q5_K_M", 17, gguf.TypeQ5_K, true},
	{"Q6_K", 18, gguf.TypeQ6_K, true},
	{"BF16", 32, gguf.TypeBF16, false},
}

// FileTypes lists the accepted --type names.
func FileTypes() []string {
	names := make([]string, len(fileTypes))
	for i, ft := range fileTypes {
		names[i] = ft.name
	}
	return names
}

// parseFileType returns the file type named s (case-insensitive).
func parseFileType(s string) (fileType, error) {
	for _, ft := range fileTypes {
		if strings.EqualFold(ft.name, s) {
			return ft, nil
		}
	}
	return fileType{}, fmt.Errorf("synth: unknown file type %q (want one of %v)", s, FileTypes())
}

// tensorType picks the type of one tensor the way llama.cpp's converter
// (F32, F16, BF16) and quantizer (llama_tensor_get_type, without an
// importance matrix) do for this file type: 1-D tensors stay F32; the
// output projection (token_embd.weight when the output is tied) gets Q6_K
// in quantized files other than Q8_0; in Q4_K_M and Q5_K_M, attn_v and
// ffn_down get Q6_K in the first and last eighth of the layers and in every
// third layer between; k-quants fall back to a legacy type when the row
// length is not a multiple of 256.
func (ft fileType) tensorType(t *tensorSpec, c *Config) gguf.Type {
	if len(t.dims) < 2 {
		return gguf.TypeF32
	}
	typ := ft.base
	if !ft.mixed {
		return typ
	}
	name := strings.TrimPrefix(t.name, fmt.Sprintf("blk.%d.", t.layer))
	switch {
	case t.name == "output.weight" || (c.Tied && t.name == "token_embd.weight"):
		if t.rowLen()%gguf.QK_K != 0 {
			typ = gguf.TypeQ8_0
		} else if typ != gguf.TypeQ8_0 {
			typ = gguf.TypeQ6_K
		}
	case name == "attn_v.weight" || name == "ffn_down.weight":
		if (ft.name == "Q4_K_M" || ft.name == "Q5_K_M") && useMoreBits(t.layer, c.Layers) {
			typ = gguf.TypeQ6_K
		}
	}
	if t.rowLen()%gguf.QK_K != 0 {
		switch typ {
		case gguf.TypeQ4_K:
			typ = gguf.TypeQ5_0
		case gguf.TypeQ5_K:
			typ = gguf.TypeQ5_1
		case gguf.TypeQ6_K:
			typ = gguf.TypeQ8_0
		}
	}
	return typ
}

// useMoreBits is llama.cpp's choice of the layers that get more bits.
func useMoreBits(layer, layers int) bool {
	return layer < layers/8 || layer >= 7*layers/8 || (layer-layers/8)%3 == 2
}
