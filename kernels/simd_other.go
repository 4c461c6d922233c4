//go:build !amd64

package kernels

// simdKernels returns nil: only amd64 has assembly kernels.
func simdKernels() *kernelSet { return nil }
