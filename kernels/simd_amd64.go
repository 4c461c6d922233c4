package kernels

import (
	"maps"
	"unsafe"

	"golang.org/x/sys/cpu"

	"llmserve/gguf"
)

// simdKernels returns the assembly kernel sets this CPU can run, slowest
// first: AVX2 (the portable set with assembly kernels swapped in, needing
// AVX2, FMA and F16C), then AVX512-VNNI on top of it.
func simdKernels() []*kernelSet {
	avx2 := avx2Kernels()
	if avx2 == nil {
		return nil
	}
	if v := vnniKernels(avx2); v != nil {
		return []*kernelSet{avx2, v}
	}
	return []*kernelSet{avx2}
}

// avx2Kernels returns the portable set with the AVX2 kernels swapped in, or
// nil when the CPU (or OS) lacks AVX2, FMA or F16C.
func avx2Kernels() *kernelSet {
	if !cpu.X86.HasAVX2 || !cpu.X86.HasFMA || !cpuidF16C() {
		return nil
	}
	ks := portableKernels()
	ks.name = "avx2"
	ks.dot = dotF32Asm
	ks.axpy = axpyAsm
	ks.quantize = quantizeAsm
	ks.dots = dotsAsm
	ks.axpys = axpysAsm
	ks.types[gguf.TypeF32] = typeKernel{actF32, dotF32RowAsm, nil}
	ks.types[gguf.TypeF16] = typeKernel{actF32, fq(dotF16AVX2, 2), nil}
	ks.types[gguf.TypeBF16] = typeKernel{actF32, fq(dotBF16AVX2, 2), nil}
	ks.types[gguf.TypeQ4_0] = typeKernel{actQ8, lq(dotQ4_0AVX2, 18), lq4(dotQ4_0x4AVX2, lq(dotQ4_0AVX2, 18), 18)}
	ks.types[gguf.TypeQ4_1] = typeKernel{actQ8, lqs(dotQ4_1AVX2, 20), nil}
	ks.types[gguf.TypeQ5_0] = typeKernel{actQ8, lq(dotQ5_0AVX2, 22), nil}
	ks.types[gguf.TypeQ5_1] = typeKernel{actQ8, lqs(dotQ5_1AVX2, 24), nil}
	ks.types[gguf.TypeQ8_0] = typeKernel{actQ8, lq(dotQ8_0AVX2, 34), lq4(dotQ8_0x4AVX2, lq(dotQ8_0AVX2, 34), 34)}
	ks.types[gguf.TypeQ2_K] = typeKernel{actQ8K, kq(dotQ2_KAVX2, 84), nil}
	ks.types[gguf.TypeQ3_K] = typeKernel{actQ8K, kq(dotQ3_KAVX2, 110), nil}
	ks.types[gguf.TypeQ4_K] = typeKernel{actQ8K, kq(dotQ4_KAVX2, 144), kq4(dotQ4_Kx4AVX2, kq(dotQ4_KAVX2, 144), 144)}
	ks.types[gguf.TypeQ5_K] = typeKernel{actQ8K, kq(dotQ5_KAVX2, 176), kq4(dotQ5_Kx4AVX2, kq(dotQ5_KAVX2, 176), 176)}
	ks.types[gguf.TypeQ6_K] = typeKernel{actQ8K, kq(dotQ6_KAVX2, 210), kq4(dotQ6_Kx4AVX2, kq(dotQ6_KAVX2, 210), 210)}
	return ks
}

// vnniKernels returns the AVX2 set with the legacy, Q4_K, Q5_K and Q6_K
// kernels replaced by their AVX512-VNNI variants, or nil when the CPU lacks
// AVX512-VNNI with 256-bit (VL) encodings. Single-thread, in cache, the
// k-quant ones ran 3-8% faster on one row and 20-50% faster on four rows
// (prefill) than AVX2; the Q2_K and Q3_K variants were no faster (Q3_K 15%
// slower: one long accumulation chain) and are left out.
func vnniKernels(avx2 *kernelSet) *kernelSet {
	if !cpu.X86.HasAVX512VNNI || !cpu.X86.HasAVX512VL {
		return nil
	}
	ks := &kernelSet{name: "avx512vnni", types: maps.Clone(avx2.types), dot: avx2.dot, axpy: avx2.axpy, dots: avx2.dots, axpys: avx2.axpys, quantize: avx2.quantize}
	ks.types[gguf.TypeQ4_0] = typeKernel{actQ8, lq(dotQ4_0VNNI, 18), lq4(dotQ4_0x4VNNI, lq(dotQ4_0VNNI, 18), 18)}
	ks.types[gguf.TypeQ4_1] = typeKernel{actQ8, lqs(dotQ4_1VNNI, 20), nil}
	ks.types[gguf.TypeQ5_0] = typeKernel{actQ8, lq(dotQ5_0VNNI, 22), nil}
	ks.types[gguf.TypeQ5_1] = typeKernel{actQ8, lqs(dotQ5_1VNNI, 24), nil}
	ks.types[gguf.TypeQ8_0] = typeKernel{actQ8, lq(dotQ8_0VNNI, 34), lq4(dotQ8_0x4VNNI, lq(dotQ8_0VNNI, 34), 34)}
	ks.types[gguf.TypeQ4_K] = typeKernel{actQ8K, kq(dotQ4_KVNNI, 144), kq4(dotQ4_Kx4VNNI, kq(dotQ4_KVNNI, 144), 144)}
	ks.types[gguf.TypeQ5_K] = typeKernel{actQ8K, kq(dotQ5_KVNNI, 176), kq4(dotQ5_Kx4VNNI, kq(dotQ5_KVNNI, 176), 176)}
	ks.types[gguf.TypeQ6_K] = typeKernel{actQ8K, kq(dotQ6_KVNNI, 210), kq4(dotQ6_Kx4VNNI, kq(dotQ6_KVNNI, 210), 210)}
	return ks
}

// The wrappers below check, through one bounds check on the last byte, that
// the weight row holds the blocks the kernel will read, then pass pointers.

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

func dotsAsm(out, q, k []float32, stride int) {
	if len(out) == 0 {
		return
	}
	if len(q)%8 != 0 || len(q) == 0 || stride < len(q) {
		dotsGo(out, q, k, stride)
		return
	}
	_ = k[(len(out)-1)*stride+len(q)-1]
	dotsAVX2(&out[0], &q[0], &k[0], len(q), stride, len(out))
}

func axpysAsm(out, w, v []float32, stride int) {
	if len(w) == 0 || len(out) == 0 {
		return
	}
	if len(out)%8 != 0 || stride < len(out) {
		axpysGo(out, w, v, stride)
		return
	}
	_ = v[(len(w)-1)*stride+len(out)-1]
	axpysAVX2(&out[0], &w[0], &v[0], len(out), stride, len(w))
}

func quantizeAsm(r *actRow, k actKind) {
	bs := qkK
	if k == actQ8 {
		bs = qk8
	}
	_ = r.q[len(r.f)-1]
	_ = r.b[len(r.f)/bsumK-1]
	_ = r.d[len(r.f)/bs-1]
	quantizeRowAVX2(&r.f[0], &r.q[0], len(r.f), bs, &r.d[0], &r.b[0])
	if k == actQ8 {
		for b := range r.d {
			r.s[b] = r.d[b] * float32(int(r.b[2*b])+int(r.b[2*b+1]))
		}
	}
}

func dotF32RowAsm(w []byte, x *actRow) float32 {
	_ = w[4*len(x.f)-1]
	return dotF32AVX2((*float32)(unsafe.Pointer(&w[0])), &x.f[0], len(x.f))
}

// fq wraps a float-weight assembly kernel of valueBytes-byte values.
func fq(f func(w *byte, x *float32, n int) float32, valueBytes int) rowDot {
	return func(w []byte, x *actRow) float32 {
		_ = w[valueBytes*len(x.f)-1]
		return f(&w[0], &x.f[0], len(x.f))
	}
}

// lq wraps a legacy-type assembly kernel of blockBytes-byte blocks.
func lq(f func(w *byte, q *int8, d *float32, nb int) float32, blockBytes int) rowDot {
	return func(w []byte, x *actRow) float32 {
		_ = w[blockBytes*len(x.d)-1]
		return f(&w[0], &x.q[0], &x.d[0], len(x.d))
	}
}

// lqs wraps a legacy-type assembly kernel that also takes the block sums.
func lqs(f func(w *byte, q *int8, d, s *float32, nb int) float32, blockBytes int) rowDot {
	return func(w []byte, x *actRow) float32 {
		_ = w[blockBytes*len(x.d)-1]
		return f(&w[0], &x.q[0], &x.d[0], &x.s[0], len(x.d))
	}
}

// kq wraps a k-quant assembly kernel of blockBytes-byte super-blocks.
func kq(f func(w *byte, q *int8, d *float32, bsums *int16, nb int) float32, blockBytes int) rowDot {
	return func(w []byte, x *actRow) float32 {
		_ = w[blockBytes*len(x.d)-1]
		return f(&w[0], &x.q[0], &x.d[0], &x.b[0], len(x.d))
	}
}

// lq4 wraps a four-row legacy-type assembly kernel; one is the single-row
// kernel used when the rows are not evenly spaced.
func lq4(f func(w *byte, q *int8, d *float32, nb, qs, ds int, out *float32), one rowDot, blockBytes int) rowDot4 {
	return func(w []byte, a []actRow) (out [4]float32) {
		x := &a[0]
		_ = w[blockBytes*len(x.d)-1]
		qs, ds, _, ok := strides4(a)
		if !ok {
			for i := range out {
				out[i] = one(w, &a[i])
			}
			return out
		}
		f(&w[0], &x.q[0], &x.d[0], len(x.d), qs, ds, &out[0])
		return out
	}
}

// kq4 wraps a four-row k-quant assembly kernel; one is the single-row
// kernel used when the rows are not evenly spaced.
func kq4(f func(w *byte, q *int8, d *float32, bsums *int16, nb, qs, ds, bs int, out *float32), one rowDot, blockBytes int) rowDot4 {
	return func(w []byte, a []actRow) (out [4]float32) {
		x := &a[0]
		_ = w[blockBytes*len(x.d)-1]
		qs, ds, bs, ok := strides4(a)
		if !ok {
			for i := range out {
				out[i] = one(w, &a[i])
			}
			return out
		}
		f(&w[0], &x.q[0], &x.d[0], &x.b[0], len(x.d), qs, ds, bs, &out[0])
		return out
	}
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
