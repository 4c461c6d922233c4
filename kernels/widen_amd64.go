package kernels

import "golang.org/x/sys/cpu"

// widenAsm says whether the CPU runs the widening kernels of
// widen_amd64.s (AVX2 and F16C); set once at package initialization.
var widenAsm = cpu.X86.HasAVX2 && cpuidF16C()

//go:noescape
func widenF16AVX2(dst *float32, src *uint16, n int)

//go:noescape
func widenQ8_0AVX2(dst *float32, src *byte, nb int)
