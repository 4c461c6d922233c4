package kernels

import "llmserve/gguf"

// rowDot is the dot product of one weight row (its bytes) with one prepared
// activation row.
type rowDot func(w []byte, x *actRow) float32

// typeKernel is how MatMul handles one weight type.
type typeKernel struct {
	act actKind
	dot rowDot
}

// kernelSet maps every supported weight type to its kernel. Two sets exist:
// the portable one and, where the CPU allows, one with assembly kernels.
type kernelSet struct {
	name  string
	types map[gguf.Type]typeKernel
	dot   func(a, b []float32) float32 // Dot
}

func portableKernels() *kernelSet {
	return &kernelSet{
		name: "go",
		types: map[gguf.Type]typeKernel{
			gguf.TypeF32:  {actF32, dotF32Row},
			gguf.TypeF16:  {actF32, dotF16Row},
			gguf.TypeBF16: {actF32, dotBF16Row},
			gguf.TypeQ4_0: {actQ8, dotQ4_0},
			gguf.TypeQ4_1: {actQ8, dotQ4_1},
			gguf.TypeQ5_0: {actQ8, dotQ5_0},
			gguf.TypeQ5_1: {actQ8, dotQ5_1},
			gguf.TypeQ8_0: {actQ8, dotQ8_0},
			gguf.TypeQ2_K: {actQ8K, dotQ2_K},
			gguf.TypeQ3_K: {actQ8K, dotQ3_K},
			gguf.TypeQ4_K: {actQ8K, dotQ4_K},
			gguf.TypeQ5_K: {actQ8K, dotQ5_K},
			gguf.TypeQ6_K: {actQ8K, dotQ6_K},
		},
		dot: dotF32Go,
	}
}

// kernelSets lists the sets usable on this CPU, fastest first. It is built
// once at package initialization and only read afterwards.
var kernelSets = buildKernelSets()

func buildKernelSets() []*kernelSet {
	sets := []*kernelSet{portableKernels()}
	if s := simdKernels(); s != nil {
		sets = append([]*kernelSet{s}, sets...)
	}
	return sets
}

// bestKernels is the set MatMul and Dot use.
func bestKernels() *kernelSet { return kernelSets[0] }
