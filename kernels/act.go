package kernels

import "math"

// Activation rows are quantized once per MatMul to symmetric 8-bit blocks,
// the form the integer dot products take:
//
//   - blocks of 32 (ggml's Q8_0/Q8_1) for the legacy weight types: one scale
//     d per block and, for the types with an offset (Q4_1, Q5_1), the block's
//     value sum d·Σq;
//   - super-blocks of 256 (ggml's Q8_K) for the k-quants: one scale per
//     super-block and the integer sums of each group of 16 values, which the
//     k-quants need for their minimums (Q2_K, Q4_K, Q5_K) and offsets (Q6_K).
//
// Values are rounded to the nearest of -127..127 times d = max|x|/127.

const (
	qk8   = 32  // values per block of the legacy activation format
	qkK   = 256 // values per super-block of the k-quant activation format
	bsumK = 16  // values per block sum of the k-quant activation format
)

// actKind says how a weight type wants its activations.
type actKind int

const (
	actF32 actKind = iota // plain float32
	actQ8                 // blocks of 32
	actQ8K                // super-blocks of 256
)

// actRow is one quantized activation row of cols values.
type actRow struct {
	f []float32 // [cols] the row itself (actF32)
	q []int8    // [cols] quantized values (actQ8, actQ8K)
	d []float32 // [cols/32 or cols/256] block scales
	s []float32 // [cols/32] d·Σq per block (actQ8)
	b []int16   // [cols/16] Σq per group of 16 (actQ8K; scratch for actQ8)
}

// actBuf holds the quantized activations of n rows, reused between calls.
// Row i's slices are at a fixed stride from row 0's, which the four-row
// kernels rely on.
type actBuf struct {
	q    []int8    // [n*cols]
	d    []float32 // [n*cols/blocksize]
	s    []float32 // [n*cols/32]
	b    []int16   // [n*cols/16]
	rows []actRow  // [n] views into the above
}

// prepare makes room for n rows of cols values of kind k and returns the
// row views over x, still to be filled by quantize.
func (a *actBuf) prepare(k actKind, x []float32, n, cols int) []actRow {
	if cap(a.rows) < n {
		a.rows = make([]actRow, n)
	}
	rows := a.rows[:n]
	if k == actF32 {
		for i := range rows {
			rows[i] = actRow{f: x[i*cols : (i+1)*cols]}
		}
		return rows
	}
	bs := qk8
	if k == actQ8K {
		bs = qkK
	}
	nb := cols / bs
	a.q = grow(a.q, n*cols)
	a.d = grow(a.d, n*nb)
	a.s = grow(a.s, n*nb)
	a.b = grow(a.b, n*(cols/bsumK))
	for i := range rows {
		r := actRow{
			f: x[i*cols : (i+1)*cols],
			q: a.q[i*cols : (i+1)*cols],
			d: a.d[i*nb : (i+1)*nb],
		}
		r.b = a.b[i*(cols/bsumK) : (i+1)*(cols/bsumK)]
		if k == actQ8 {
			r.s = a.s[i*nb : (i+1)*nb]
		}
		rows[i] = r
	}
	return rows
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// quantize fills r.q, r.d and r.s or r.b from r.f. It is the portable
// quantizer; kernel sets may bring a faster one with identical results.
func (r *actRow) quantize(k actKind) {
	switch k {
	case actQ8:
		for b := range r.d {
			d, sum := quantizeBlock(r.f[b*qk8:(b+1)*qk8], r.q[b*qk8:(b+1)*qk8])
			r.d[b] = d
			r.s[b] = d * float32(sum)
		}
	case actQ8K:
		for b := range r.d {
			q := r.q[b*qkK : (b+1)*qkK]
			r.d[b], _ = quantizeBlock(r.f[b*qkK:(b+1)*qkK], q)
			for g := 0; g < qkK/bsumK; g++ {
				var s int16
				for _, v := range q[g*bsumK : (g+1)*bsumK] {
					s += int16(v)
				}
				r.b[b*(qkK/bsumK)+g] = s
			}
		}
	}
}

// quantizeBlock writes round(x/d) to q with d = max|x|/127 and returns d and
// Σq.
func quantizeBlock(x []float32, q []int8) (float32, int) {
	var amax float32
	for _, v := range x {
		amax = max(amax, abs32(v))
	}
	if amax == 0 {
		clear(q)
		return 0, 0
	}
	id := 127 / amax
	sum := 0
	for i, v := range x {
		n := min(max(int(math.RoundToEven(float64(v*id))), -127), 127)
		q[i] = int8(n)
		sum += n
	}
	return amax / 127, sum
}

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }
