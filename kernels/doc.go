// Package kernels holds the CPU compute of the forward pass: matrix-vector
// and matrix-matrix products directly on ggml's quantized weight blocks, and
// the small element-wise ops around them (RMS norm, RoPE, softmax, SwiGLU).
//
// Work is spread over a fixed set of worker goroutines (Pool). For the
// quantized weight types the activation row is first quantized to 8-bit
// blocks, as llama.cpp does (blocks of 32 for the legacy types, super-blocks
// of 256 with block sums for the k-quants), and each weight row is then
// reduced by integer dot products per block (for Q4_0, Q8_0, Q4_K, Q5_K and
// Q6_K, four activation rows per pass over a weight row where n > 1). On
// amd64 with AVX2, FMA and F16C every supported type's dot product runs in
// assembly (with AVX512-VNNI variants where the CPU has them); a portable Go
// path computes the same thing everywhere else. The set is chosen once, at
// package initialization; the tests run every set the CPU allows against
// float64 references.
package kernels
