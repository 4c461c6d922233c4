package kernels

// Assembly kernels (dot_*_amd64.s, dot4_amd64.s). They need AVX2, FMA and
// F16C.

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
func dotQ4_0x4AVX2(w *byte, q *int8, d *float32, nb, qs, ds int, out *float32)

//go:noescape
func dotQ5_Kx4AVX2(w *byte, q *int8, d *float32, bsums *int16, nb, qs, ds, bs int, out *float32)

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

// AVX512-VNNI variants (dot_*_vnni_amd64.s), same signatures.

//go:noescape
func dotQ4_KVNNI(w *byte, q *int8, d *float32, bsums *int16, nb int) float32

//go:noescape
func dotQ5_KVNNI(w *byte, q *int8, d *float32, bsums *int16, nb int) float32

//go:noescape
func dotQ6_KVNNI(w *byte, q *int8, d *float32, bsums *int16, nb int) float32

//go:noescape
func dotQ8_0VNNI(w *byte, q *int8, d *float32, nb int) float32

//go:noescape
func dotQ4_0VNNI(w *byte, q *int8, d *float32, nb int) float32

//go:noescape
func dotQ4_1VNNI(w *byte, q *int8, d, s *float32, nb int) float32

//go:noescape
func dotQ5_0VNNI(w *byte, q *int8, d *float32, nb int) float32

//go:noescape
func dotQ5_1VNNI(w *byte, q *int8, d, s *float32, nb int) float32

//go:noescape
func dotQ8_0x4VNNI(w *byte, q *int8, d *float32, nb, qs, ds int, out *float32)

//go:noescape
func dotQ4_0x4VNNI(w *byte, q *int8, d *float32, nb, qs, ds int, out *float32)

//go:noescape
func dotQ5_Kx4VNNI(w *byte, q *int8, d *float32, bsums *int16, nb, qs, ds, bs int, out *float32)

//go:noescape
func dotQ4_Kx4VNNI(w *byte, q *int8, d *float32, bsums *int16, nb, qs, ds, bs int, out *float32)

//go:noescape
func dotQ6_Kx4VNNI(w *byte, q *int8, d *float32, bsums *int16, nb, qs, ds, bs int, out *float32)

// quantizeRowAVX2 quantizes n values of x in blocks of bs (32 or 256): q
// gets the values, d one scale per block, sums the sum of every 16 values.
//
//go:noescape
func quantizeRowAVX2(x *float32, q *int8, n, bs int, d *float32, sums *int16)

//go:noescape
func dotsAVX2(out, q, k *float32, hd, stride, n int)

//go:noescape
func axpysAVX2(out, w, v *float32, hd, stride, n int)

func cpuidF16C() bool
