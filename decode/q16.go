package decode

import "strconv"

// gpuQ16Min is the smallest step, in tokens, whose products of quantized
// matrices run on the 16-bit tensor cores by default: the steps past the
// graph buckets, i.e. prompts. Measured on the H200 (llmserve bench -p 512,
// synth models, docs/PERFORMANCE.md): pp512 8B Q4_K_M 7185 → 9088 tok/s
// against the int8 products, 8B Q8_0 9093 → 10385, 1B Q4_K_M 41807 →
// 50165; the decode batches (16..64 tokens) keep the int8 products until
// the two are measured there.
const gpuQ16Min = MaxBucket + 1

// q16Min resolves the step size from which quantized products take the
// 16-bit path: opt (GPUOptions.MatMulQ16Min: 0 the default, negative
// never), overridden by env (LLMSERVE_MATMUL_Q16: "1" every step, "0"
// never, a larger number that many tokens). 0 means never.
func q16Min(opt int, env string) int {
	if v, err := strconv.Atoi(env); err == nil && v >= 0 {
		return v
	}
	switch {
	case opt < 0:
		return 0
	case opt == 0:
		return gpuQ16Min
	}
	return opt
}
