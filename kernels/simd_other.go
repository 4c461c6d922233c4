//go:build !amd64

package kernels

// simdKernels returns nothing: only amd64 has assembly kernels.
func simdKernels() []*kernelSet { return nil }
