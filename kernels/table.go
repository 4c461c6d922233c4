package kernels

import "llmserve/gguf"

// rowDot is the dot product of one weight row (its bytes) with one prepared
// activation row.
type rowDot func(w []byte, x *actRow) float32

// rowDot4 is the dot product of one weight row with four consecutive
// activation rows of one actBuf, a[0..3].
type rowDot4 func(w []byte, a []actRow) [4]float32

// typeKernel is how MatMul handles one weight type.
type typeKernel struct {
	act  actKind
	dot  rowDot
	dot4 rowDot4 // nil where there is no four-row kernel
}

// kernelSet maps every supported weight type to its kernel. The portable
// set always exists; on amd64 the CPU may allow assembly sets (AVX2,
// AVX512-VNNI) that replace some or all of its kernels.
type kernelSet struct {
	name  string
	types map[gguf.Type]typeKernel
	dot   func(a, b []float32) float32              // Dot
	axpy  func(y []float32, a float32, x []float32) // Axpy
	dots  func(out, q, k []float32, stride int)     // Dots
	axpys func(out, w, v []float32, stride int)     // Axpys

	// quantize prepares an activation row of kind actQ8 or actQ8K, with
	// the results of actRow.quantize.
	quantize func(r *actRow, k actKind)
}

// portableKernels returns a fresh portable set (callers may modify it).
func portableKernels() *kernelSet {
	return &kernelSet{
		name: "go",
		types: map[gguf.Type]typeKernel{
			gguf.TypeF32:  {actF32, dotF32Row, nil},
			gguf.TypeF16:  {actF32, dotF16Row, nil},
			gguf.TypeBF16: {actF32, dotBF16Row, nil},
			gguf.TypeQ4_0: {actQ8, dotQ4_0, nil},
			gguf.TypeQ4_1: {actQ8, dotQ4_1, nil},
			gguf.TypeQ5_0: {actQ8, dotQ5_0, nil},
			gguf.TypeQ5_1: {actQ8, dotQ5_1, nil},
			gguf.TypeQ8_0: {actQ8, dotQ8_0, nil},
			gguf.TypeQ2_K: {actQ8K, dotQ2_K, nil},
			gguf.TypeQ3_K: {actQ8K, dotQ3_K, nil},
			gguf.TypeQ4_K: {actQ8K, dotQ4_K, nil},
			gguf.TypeQ5_K: {actQ8K, dotQ5_K, nil},
			gguf.TypeQ6_K: {actQ8K, dotQ6_K, nil},
		},
		dot:      dotF32Go,
		axpy:     axpyGo,
		dots:     dotsGo,
		axpys:    axpysGo,
		quantize: (*actRow).quantize,
	}
}

// kernelSets lists the sets usable on this CPU, fastest first. It is built
// once at package initialization and only read afterwards.
var kernelSets = buildKernelSets()

func buildKernelSets() []*kernelSet {
	sets := []*kernelSet{portableKernels()}
	for _, s := range simdKernels() {
		sets = append([]*kernelSet{s}, sets...)
	}
	return sets
}

// bestKernels is the set MatMul, Dot and Axpy use.
func bestKernels() *kernelSet { return kernelSets[0] }
