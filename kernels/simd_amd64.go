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

//go:noescape
func dotQ8_0x4AVX2(w *byte, q *int8, d *float32, nb, qs, ds int, out *float32)

//go:noescape
func dotQ4_Kx4AVX2(w *byte, q *int8, d *float32, bsums *int16, nb, qs, ds, bs int, out *float32)

//go:noescape
func dotQ6_Kx4AVX2(w *byte, q *int8, d *float32, bsums *int16, nb, qs, ds, bs int, out *float32)

//go:noescape
func dotQ3_KAVX2(w *byte, q *int8, d *float32, bsums *int16, nb int) float32

//go:noescape
func dotQ2_KAVX2(w *byte, q *int8, d *float32, bsums *int16, nb int) float32

//go:noescape
func dotQ4_1AVX2(w *byte, q *int8, d, s *float32, nb int) float32

//go:noescape
func dotQ5_0AVX2(w *byte, q *int8, d *float32, nb int) float32

//go:noescape
func dotQ5_1AVX2(w *byte, q *int8, d, s *float32, nb int) float32

//go:noescape
func axpyAVX2(y *float32, a float32, x *float32, n int)

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
	ks.axpy = axpyAsm
	ks.types[gguf.TypeF32] = typeKernel{actF32, dotF32RowAsm, nil}
	ks.types[gguf.TypeF16] = typeKernel{actF32, dotF16RowAsm, nil}
	ks.types[gguf.TypeBF16] = typeKernel{actF32, dotBF16RowAsm, nil}
	ks.types[gguf.TypeQ4_0] = typeKernel{actQ8, dotQ4_0Asm, nil}
	ks.types[gguf.TypeQ4_1] = typeKernel{actQ8, dotQ4_1Asm, nil}
	ks.types[gguf.TypeQ5_0] = typeKernel{actQ8, dotQ5_0Asm, nil}
	ks.types[gguf.TypeQ5_1] = typeKernel{actQ8, dotQ5_1Asm, nil}
	ks.types[gguf.TypeQ8_0] = typeKernel{actQ8, dotQ8_0Asm, dotQ8_0x4Asm}
	ks.types[gguf.TypeQ4_K] = typeKernel{actQ8K, dotQ4_KAsm, dotQ4_Kx4Asm}
	ks.types[gguf.TypeQ5_K] = typeKernel{actQ8K, dotQ5_KAsm, nil}
	ks.types[gguf.TypeQ2_K] = typeKernel{actQ8K, dotQ2_KAsm, nil}
	ks.types[gguf.TypeQ3_K] = typeKernel{actQ8K, dotQ3_KAsm, nil}
	ks.types[gguf.TypeQ6_K] = typeKernel{actQ8K, dotQ6_KAsm, dotQ6_Kx4Asm}
	return ks
}

func dotF32Asm(a, b []float32) float32 {
	if len(a) == 0 {
		return 0
	}
	_ = b[len(a)-1]
	return dotF32AVX2(&a[0], &b[0], len(a))
}

func axpyAsm(y []float32, a float32, x []float32) {
	if len(y) == 0 {
		return
	}
	_ = x[len(y)-1]
	axpyAVX2(&y[0], a, &x[0], len(y))
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

func dotQ4_1Asm(w []byte, x *actRow) float32 {
	_ = w[20*len(x.d)-1]
	return dotQ4_1AVX2(&w[0], &x.q[0], &x.d[0], &x.s[0], len(x.d))
}

func dotQ5_0Asm(w []byte, x *actRow) float32 {
	_ = w[22*len(x.d)-1]
	return dotQ5_0AVX2(&w[0], &x.q[0], &x.d[0], len(x.d))
}

func dotQ5_1Asm(w []byte, x *actRow) float32 {
	_ = w[24*len(x.d)-1]
	return dotQ5_1AVX2(&w[0], &x.q[0], &x.d[0], &x.s[0], len(x.d))
}

func dotQ2_KAsm(w []byte, x *actRow) float32 {
	_ = w[84*len(x.d)-1]
	return dotQ2_KAVX2(&w[0], &x.q[0], &x.d[0], &x.b[0], len(x.d))
}

func dotQ3_KAsm(w []byte, x *actRow) float32 {
	_ = w[110*len(x.d)-1]
	return dotQ3_KAVX2(&w[0], &x.q[0], &x.d[0], &x.b[0], len(x.d))
}

func dotQ4_0Asm(w []byte, x *actRow) float32 {
	_ = w[18*len(x.d)-1]
	return dotQ4_0AVX2(&w[0], &x.q[0], &x.d[0], len(x.d))
}

func dotBF16RowAsm(w []byte, x *actRow) float32 {
	_ = w[2*len(x.f)-1]
	return dotBF16AVX2(&w[0], &x.f[0], len(x.f))
}

// strides4 returns the distances in bytes between consecutive rows of
// a[0..3] for their quantized values, scales and group sums, and whether
// the four rows are evenly spaced (always so for the rows of one actBuf).
func strides4(a []actRow) (qs, ds, bs int, ok bool) {
	_ = a[3]
	qs = int(uintptr(unsafe.Pointer(&a[1].q[0])) - uintptr(unsafe.Pointer(&a[0].q[0])))
	ds = int(uintptr(unsafe.Pointer(&a[1].d[0])) - uintptr(unsafe.Pointer(&a[0].d[0])))
	if a[0].b != nil {
		bs = int(uintptr(unsafe.Pointer(&a[1].b[0])) - uintptr(unsafe.Pointer(&a[0].b[0])))
	}
	for i := 2; i < 4; i++ {
		if uintptr(unsafe.Pointer(&a[i].q[0]))-uintptr(unsafe.Pointer(&a[0].q[0])) != uintptr(i*qs) ||
			uintptr(unsafe.Pointer(&a[i].d[0]))-uintptr(unsafe.Pointer(&a[0].d[0])) != uintptr(i*ds) ||
			a[0].b != nil && uintptr(unsafe.Pointer(&a[i].b[0]))-uintptr(unsafe.Pointer(&a[0].b[0])) != uintptr(i*bs) {
			return 0, 0, 0, false
		}
	}
	return qs, ds, bs, true
}

func dotQ8_0x4Asm(w []byte, a []actRow) (out [4]float32) {
	x := &a[0]
	_ = w[34*len(x.d)-1]
	qs, ds, _, ok := strides4(a)
	if !ok {
		for i := range out {
			out[i] = dotQ8_0Asm(w, &a[i])
		}
		return out
	}
	dotQ8_0x4AVX2(&w[0], &x.q[0], &x.d[0], len(x.d), qs, ds, &out[0])
	return out
}

func dotQ4_Kx4Asm(w []byte, a []actRow) (out [4]float32) {
	x := &a[0]
	_ = w[144*len(x.d)-1]
	qs, ds, bs, ok := strides4(a)
	if !ok {
		for i := range out {
			out[i] = dotQ4_KAsm(w, &a[i])
		}
		return out
	}
	dotQ4_Kx4AVX2(&w[0], &x.q[0], &x.d[0], &x.b[0], len(x.d), qs, ds, bs, &out[0])
	return out
}

func dotQ6_Kx4Asm(w []byte, a []actRow) (out [4]float32) {
	x := &a[0]
	_ = w[210*len(x.d)-1]
	qs, ds, bs, ok := strides4(a)
	if !ok {
		for i := range out {
			out[i] = dotQ6_KAsm(w, &a[i])
		}
		return out
	}
	dotQ6_Kx4AVX2(&w[0], &x.q[0], &x.d[0], &x.b[0], len(x.d), qs, ds, bs, &out[0])
	return out
}
