package gguf

import "math"

// The scale searches of ggml's k-quant reference quantizers. They work in
// float32 throughout, as ggml does; where ggml's C adds a product, the
// product is rounded to float32 first so that no platform fuses the two.

// groupMaxEps is the magnitude below which a group counts as all zero.
const groupMaxEps = 1e-15

// nearestInt rounds f to the nearest integer, ties to even, by ggml's
// trick of adding 1.5·2²³ and reading the mantissa. Valid for
// |f| ≤ 4194303; outside that the result is some integer, never a fault,
// and callers clamp it.
func nearestInt(f float32) int32 {
	v := f + 12582912
	return int32(math.Float32bits(v)&0x7fffff) - 0x400000
}

func clamp32(v, lo, hi int32) int32 {
	return max(lo, min(hi, v))
}

// makeQXQuants fits a symmetric scale to x with levels -nmax..nmax-1, the
// values weighted by x², like ggml's make_qx_quants with rmse_type 1 and
// no importance weights. It stores level+nmax in L and returns the scale.
func makeQXQuants(nmax int32, x []float32, L []int8) float32 {
	amax, max := absMax(x)
	if amax < groupMaxEps {
		clear(L)
		return 0
	}
	fnmax := float32(nmax)
	iscale := -fnmax / max
	var sumlx, suml2 float32
	for i, v := range x {
		l := clamp32(nearestInt(iscale*v), -nmax, nmax-1)
		L[i] = int8(l + nmax)
		w, fl := v*v, float32(l)
		sumlx += float32(w * v * fl)
		suml2 += float32(w * fl * fl)
	}
	scale := float32(0)
	if suml2 != 0 {
		scale = sumlx / suml2
	}
	best := scale * sumlx
	for is := int32(-9); is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -(fnmax + 0.1*float32(is)) / max
		sumlx, suml2 = 0, 0
		for _, v := range x {
			l := clamp32(nearestInt(iscale*v), -nmax, nmax-1)
			w, fl := v*v, float32(l)
			sumlx += float32(w * v * fl)
			suml2 += float32(w * fl * fl)
		}
		if suml2 > 0 && float32(sumlx*sumlx) > float32(best*suml2) {
			for i, v := range x {
				L[i] = int8(nmax + clamp32(nearestInt(iscale*v), -nmax, nmax-1))
			}
			scale = sumlx / suml2
			best = scale * sumlx
		}
	}
	return scale
}

// makeQ3Quants fits a symmetric scale with levels -nmax..nmax-1 and then
// moves single values between levels while that lowers the x²-weighted
// error, like ggml's make_q3_quants with do_rmse. It stores level+nmax in L.
func makeQ3Quants(nmax int32, x []float32, L []int8) float32 {
	amax, max := absMax(x)
	if amax < groupMaxEps {
		clear(L)
		return 0
	}
	iscale := -float32(nmax) / max
	var sumlx, suml2 float32
	for i, v := range x {
		l := clamp32(nearestInt(iscale*v), -nmax, nmax-1)
		L[i] = int8(l)
		w, fl := v*v, float32(l)
		sumlx += float32(w * v * fl)
		suml2 += float32(w * fl * fl)
	}
	for range 5 {
		changed := 0
		for i, v := range x {
			w, fl := v*v, float32(L[i])
			slx := sumlx - float32(w*v*fl)
			if slx <= 0 {
				continue
			}
			sl2 := suml2 - float32(w*fl*fl)
			nl := clamp32(nearestInt(v*sl2/slx), -nmax, nmax-1)
			if nl == int32(L[i]) {
				continue
			}
			fnl := float32(nl)
			slx += float32(w * v * fnl)
			sl2 += float32(w * fnl * fnl)
			if sl2 > 0 && float32(slx*slx)*suml2 > float32(sumlx*sumlx)*sl2 {
				L[i], sumlx, suml2 = int8(nl), slx, sl2
				changed++
			}
		}
		if changed == 0 {
			break
		}
	}
	for i := range L[:len(x)] {
		L[i] += int8(nmax)
	}
	if suml2 > 0 {
		return sumlx / suml2
	}
	return 0
}

// qkx2Search is one call of ggml's make_qkx2_quants: fit x ≈ scale·L - min
// with L in 0..nmax under the given weights, trying nstep+1 scales
// (nmax + rmin + rdelta·is)/(max - min) and keeping the least weighted
// error (absolute when mad, squared otherwise).
type qkx2Search struct {
	nmax         int32
	rmin, rdelta float32
	nstep        int
	mad          bool
}

// fit stores the levels in L (using Laux as scratch, both len(x)) and
// returns the scale and the min to subtract (≥ 0).
func (s qkx2Search) fit(x, weights []float32, L, Laux []uint8) (scale, negMin float32) {
	lo, hi := x[0], x[0]
	sumW := weights[0]
	sumX := sumW * x[0]
	for i := 1; i < len(x); i++ {
		if x[i] < lo {
			lo = x[i]
		}
		if x[i] > hi {
			hi = x[i]
		}
		w := weights[i]
		sumW += w
		sumX += float32(w * x[i])
	}
	if lo > 0 {
		lo = 0
	}
	if hi == lo {
		clear(L[:len(x)])
		return 0, -lo
	}
	fnmax := float32(s.nmax)
	iscale := fnmax / (hi - lo)
	scale = 1 / iscale
	var bestErr float32
	for i, v := range x {
		l := clamp32(nearestInt(iscale*(v-lo)), 0, s.nmax)
		L[i] = uint8(l)
		bestErr += float32(weights[i] * s.loss(float32(scale*float32(l))+lo-v))
	}
	if s.nstep < 1 {
		return scale, -lo
	}
	for is := 0; is <= s.nstep; is++ {
		iscale = (s.rmin + float32(s.rdelta*float32(is)) + fnmax) / (hi - lo)
		var sumL, sumL2, sumXL float32
		for i, v := range x {
			l := clamp32(nearestInt(iscale*(v-lo)), 0, s.nmax)
			Laux[i] = uint8(l)
			w, fl := weights[i], float32(l)
			sumL += float32(w * fl)
			sumL2 += float32(w * fl * fl)
			sumXL += float32(w * fl * v)
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if D <= 0 {
			continue
		}
		thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
		thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
		if thisMin > 0 {
			thisMin = 0
			thisScale = sumXL / sumL2
		}
		var curErr float32
		for i, v := range x {
			curErr += float32(weights[i] * s.loss(float32(thisScale*float32(Laux[i]))+thisMin-v))
		}
		if curErr < bestErr {
			copy(L, Laux[:len(x)])
			bestErr, scale, lo = curErr, thisScale, thisMin
		}
	}
	return scale, -lo
}

func (s qkx2Search) loss(diff float32) float32 {
	if s.mad {
		return abs32(diff)
	}
	return diff * diff
}
