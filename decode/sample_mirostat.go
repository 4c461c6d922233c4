package decode

import (
	"math"
	"slices"
)

// mirostatM is how many of the most likely tokens Mirostat 1 estimates
// the distribution's exponent from (llama.cpp's m = 100).
const mirostatM = 100

// mirostat picks a token with Mirostat 1 or 2 (llama.cpp's definitions)
// with the uniform draw u and updates the target surprise mu from the
// surprise of the pick. c has had the temperature applied.
func (s *Sampler) mirostat(c []candidate, u float32) int32 {
	softmax(c, 1)
	slices.SortFunc(c, byLogitDesc)
	if s.p.Mirostat == 1 {
		c = c[:s.mirostatK(c)]
	} else {
		// Mirostat 2: drop the tokens more surprising than mu, keeping one.
		n := len(c)
		for i := range c {
			if -math.Log2(float64(c[i].p)) > float64(s.mu) {
				n = i
				break
			}
		}
		c = c[:max(n, 1)]
	}
	softmax(c, 1)
	// Rounding may leave u past the total: the last token with any weight.
	pick := 0
	for i := range c {
		if c[i].p > 0 {
			pick = i
		}
	}
	var cum float32
	for i := range c {
		cum += c[i].p
		if u < cum {
			pick = i
			break
		}
	}
	if s.p.Temperature <= 0 {
		pick = 0
	}
	surprise := -math.Log2(float64(c[pick].p))
	if mu := float64(s.mu) - float64(s.p.MirostatEta)*(surprise-float64(s.p.MirostatTau)); !math.IsNaN(mu) && !math.IsInf(mu, 0) {
		s.mu = float32(mu)
	}
	return c[pick].id
}

// mirostatK estimates the Zipf exponent s_hat of c (sorted, with
// probabilities) from its mirostatM best tokens and returns how many
// tokens Mirostat 1 keeps: k = (eps * 2^mu / (1 - N^-eps))^(1/s_hat), with
// eps = s_hat - 1, between 1 and len(c).
func (s *Sampler) mirostatK(c []candidate) int {
	var sumTB, sumTT float64
	for i := 0; i < mirostatM-1 && i < len(c)-1; i++ {
		t := math.Log(float64(i+2) / float64(i+1))
		b := math.Log(float64(c[i].p) / float64(c[i+1].p))
		sumTB += t * b
		sumTT += t * t
	}
	sHat := sumTB / sumTT
	eps := sHat - 1
	k := math.Pow(eps*math.Pow(2, float64(s.mu))/(1-math.Pow(float64(s.vocab), -eps)), 1/sHat)
	switch {
	case math.IsNaN(k) || k < 1:
		return 1
	case k >= float64(len(c)):
		return len(c)
	}
	return int(k)
}
