package synth

import (
	"fmt"
	"strings"

	"llmserve/gguf"
)

// FileTypes lists the accepted file type names: llama.cpp's (F32, F16,
// BF16, Q8_0, Q4_0, Q4_K_M, Q5_K_M, Q6_K...), as gguf's quantization mixes
// know them.
func FileTypes() []string { return gguf.MixNames() }

// parseFileType returns the canonical spelling of the file type named s
// (case-insensitive) and its general.file_type value.
func parseFileType(s string) (string, uint32, error) {
	for _, name := range gguf.MixNames() {
		if strings.EqualFold(name, s) {
			id, err := gguf.MixFileType(name)
			return name, id, err
		}
	}
	return "", 0, fmt.Errorf("synth: unknown file type %q (want one of %s)", s, strings.Join(FileTypes(), ", "))
}

// tensorTypes returns the type of each tensor in file type mix, as
// llama.cpp's converter and quantizer would give it to the tensors of an
// F32 model: 1-D tensors stay F32, and quantized mixes give the output
// projection, attention V and feed-forward down the extra bits llama.cpp
// gives them.
func tensorTypes(mix string, c *Config, specs []tensorSpec) ([]gguf.Type, error) {
	model := gguf.MixModel{Arch: c.Arch, NLayers: c.Layers, NHead: c.Heads, NHeadKV: c.KVHeads, NExpert: c.Experts}
	ts := make([]gguf.MixTensor, len(specs))
	for i, s := range specs {
		ts[i] = gguf.MixTensor{Name: s.name, Dims: s.dims, Type: gguf.TypeF32}
	}
	types, err := gguf.MixTensorTypes(mix, model, ts)
	if err != nil {
		return nil, fmt.Errorf("synth: %w", err)
	}
	return types, nil
}
