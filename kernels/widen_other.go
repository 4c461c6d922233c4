//go:build !amd64

package kernels

// widenAsm is false: only amd64 has widening kernels in assembly.
const widenAsm = false

func widenF16AVX2(*float32, *uint16, int) {}

func widenQ8_0AVX2(*float32, *byte, int) {}
