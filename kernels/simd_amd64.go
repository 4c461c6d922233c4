package kernels

import (
	"unsafe"

	"golang.org/x/sys/cpu"

	"llmserve/gguf"
)

// Assembly kernels (dot_amd64.s). They need AVX2, FMA and F16C.

//go:noescape
func dotF32AVX2(a, b *float32, n int) float32

//go:noescape
func dotF16AVX2(w *byte, x *float32, n int) float32

//go:noescape
func dotQ8_0AVX2(w *byte, q *int8, d *float32, nb int) float32

//go:noescape
func dotQ4_KAVX2(w *byte, q *int8, d *float32, bsums *int16, nb int) float32

//go:noescape
func dotQ6_KAVX2(w *byte, q *int8, d *float32, bsums *int16, nb int) float32

//go:noescape
func dotQ5_KAVX2(w *byte, q *int8, d *float32, bsums *int16, nb int) float32

//go:noescape
func dotQ4_0AVX2(w *byte, q *int8, d *float32, nb int) float32

//go:noescape
func dotBF16AVX2(w *byte, x *float32, n int) float32

func cpuidF16C() bool

// simdKernels returns the portable set with the assembly kernels swapped
// in, or nil when the CPU (or OS) lacks AVX2, FMA or F16C.
func simdKernels() *kernelSet {
	if !cpu.X86.HasAVX2 || !cpu.X86.HasFMA || !cpuidF16C() {
		return nil
	}
	ks := portableKernels()
	ks.name = "avx2"
	ks.dot = dotF32Asm
	ks.types[gguf.TypeF32] = typeKernel{actF32, dotF32RowAsm}
	ks.types[gguf.TypeF16] = typeKernel{actF32, dotF16RowAsm}
	ks.types[gguf.TypeQ8_0] = typeKernel{actQ8, dotQ8_0Asm}
	ks.types[gguf.TypeQ4_K] = typeKernel{actQ8K, dotQ4_KAsm}
	ks.types[gguf.TypeQ6_K] = typeKernel{actQ8K, dotQ6_KAsm}
	ks.types[gguf.TypeQ5_K] = typeKernel{actQ8K, dotQ5_KAsm}
	ks.types[gguf.TypeQ4_0] = typeKernel{actQ8, dotQ4_0Asm}
	ks.types[gguf.TypeBF16] = typeKernel{actF32, dotBF16RowAsm}
	return ks
}

func dotF32Asm(a, b []float32) float32 {
	if len(a) == 0 {
		return 0
	}
	_ = b[len(a)-1]
	return dotF32AVX2(&a[0], &b[0], len(a))
}

func dotF32RowAsm(w []byte, x *actRow) float32 {
	_ = w[4*len(x.f)-1]
	return dotF32AVX2((*float32)(unsafe.Pointer(&w[0])), &x.f[0], len(x.f))
}

func dotF16RowAsm(w []byte, x *actRow) float32 {
	_ = w[2*len(x.f)-1]
	return dotF16AVX2(&w[0], &x.f[0], len(x.f))
}

func dotQ8_0Asm(w []byte, x *actRow) float32 {
	_ = w[34*len(x.d)-1]
	return dotQ8_0AVX2(&w[0], &x.q[0], &x.d[0], len(x.d))
}

func dotQ4_KAsm(w []byte, x *actRow) float32 {
	_ = w[144*len(x.d)-1]
	return dotQ4_KAVX2(&w[0], &x.q[0], &x.d[0], &x.b[0], len(x.d))
}

func dotQ6_KAsm(w []byte, x *actRow) float32 {
	_ = w[210*len(x.d)-1]
	return dotQ6_KAVX2(&w[0], &x.q[0], &x.d[0], &x.b[0], len(x.d))
}

func dotQ5_KAsm(w []byte, x *actRow) float32 {
	_ = w[176*len(x.d)-1]
	return dotQ5_KAVX2(&w[0], &x.q[0], &x.d[0], &x.b[0], len(x.d))
}

func dotQ4_0Asm(w []byte, x *actRow) float32 {
	_ = w[18*len(x.d)-1]
	return dotQ4_0AVX2(&w[0], &x.q[0], &x.d[0], len(x.d))
}

func dotBF16RowAsm(w []byte, x *actRow) float32 {
	_ = w[2*len(x.f)-1]
	return dotBF16AVX2(&w[0], &x.f[0], len(x.f))
}
