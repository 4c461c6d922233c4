package kernels

import "math"

// RMSNorm writes x·weight/sqrt(mean(x²)+eps) to dst. dst may alias x.
func RMSNorm(dst, x, weight []float32, eps float32) {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	scale := float32(1 / math.Sqrt(ss/float64(len(x))+float64(eps)))
	weight = weight[:len(x)]
	dst = dst[:len(x)]
	for i, v := range x {
		dst[i] = v * scale * weight[i]
	}
}

// RoPE rotates, in place, the first nRot values of each of nHeads heads of
// headDim values in x (one token) by the angles of position pos: pair i
// turns by pos·base^(-2i/nRot), divided by freqFactors[i] when freqFactors is
// not nil (llama3's rope_freqs). The normal layout pairs values (2i, 2i+1);
// the neox layout pairs (i, i+nRot/2).
func RoPE(x []float32, nHeads, headDim, nRot int, pos int, base float32, neox bool, freqFactors []float32) {
	half := nRot / 2
	var cs [2 * 256]float32 // cos, sin per pair when they fit
	var tab []float32
	if half <= 256 {
		tab = cs[:2*half]
	} else {
		tab = make([]float32, 2*half)
	}
	for i := 0; i < half; i++ {
		theta := float64(pos) * math.Pow(float64(base), -2*float64(i)/float64(nRot))
		if freqFactors != nil {
			theta /= float64(freqFactors[i])
		}
		s, c := math.Sincos(theta)
		tab[2*i], tab[2*i+1] = float32(c), float32(s)
	}
	for h := 0; h < nHeads; h++ {
		v := x[h*headDim : h*headDim+nRot]
		for i := 0; i < half; i++ {
			c, s := tab[2*i], tab[2*i+1]
			a, b := 2*i, 2*i+1
			if neox {
				a, b = i, i+half
			}
			x0, x1 := v[a], v[b]
			v[a] = x0*c - x1*s
			v[b] = x0*s + x1*c
		}
	}
}

// Softmax replaces x with exp(x-max)/Σexp(x-max).
func Softmax(x []float32) {
	if len(x) == 0 {
		return
	}
	m := x[0]
	for _, v := range x[1:] {
		m = max(m, v)
	}
	var sum float64
	for i, v := range x {
		e := expf(v - m)
		x[i] = e
		sum += float64(e)
	}
	inv := float32(1 / sum)
	for i := range x {
		x[i] *= inv
	}
}

// SwiGLU writes silu(gate)·up = gate/(1+exp(-gate))·up to dst. dst may alias
// gate or up.
func SwiGLU(dst, gate, up []float32) {
	up = up[:len(gate)]
	dst = dst[:len(gate)]
	for i, g := range gate {
		dst[i] = g / (1 + expf(-g)) * up[i]
	}
}

// Add adds a to dst element-wise.
func Add(dst, a []float32) {
	a = a[:len(dst)]
	for i := range dst {
		dst[i] += a[i]
	}
}

// Axpy adds a·x to y element-wise over len(y) values (the weighted sum of
// values in attention); x must be at least as long.
func Axpy(y []float32, a float32, x []float32) { bestKernels().axpy(y, a, x) }

// Dots sets out[p] = Σ_i q[i]·k[p*stride+i] for every p < len(out): the
// attention scores of one query against len(out) cached keys stored
// stride floats apart. k must hold (len(out)-1)*stride+len(q) values.
func Dots(out, q, k []float32, stride int) { bestKernels().dots(out, q, k, stride) }

// Axpys adds Σ_p w[p]·v[p*stride : p*stride+len(out)] to out over p <
// len(w): the weighted sum of cached values stored stride floats apart.
// v must hold (len(w)-1)*stride+len(out) values.
func Axpys(out, w, v []float32, stride int) { bestKernels().axpys(out, w, v, stride) }

// Dot returns Σ a[i]·b[i] over len(a) values; b must be at least as long.
func Dot(a, b []float32) float32 { return bestKernels().dot(a, b) }
