package decode

import (
	"math"
	"slices"
)

// typical keeps the locally typical candidates (llama.cpp's typical
// sampler): ordered by how far each token's surprise -log p is from the
// distribution's entropy, the smallest set whose probability passes p.
// The candidates come back in that order.
func typical(c []candidate, p float32) []candidate {
	softmax(c, 1)
	slices.SortFunc(c, byLogitDesc)
	var entropy float64
	for _, x := range c {
		if x.p > 0 {
			entropy -= float64(x.p) * math.Log(float64(x.p))
		}
	}
	for i := range c {
		if c[i].p > 0 {
			c[i].aux = float32(math.Abs(-math.Log(float64(c[i].p)) - entropy))
		} else {
			c[i].aux = float32(math.Inf(1))
		}
	}
	// Stable: equal distances keep the logit order.
	slices.SortStableFunc(c, func(a, b candidate) int {
		switch {
		case a.aux < b.aux:
			return -1
		case a.aux > b.aux:
			return 1
		}
		return 0
	})
	var cum float32
	for i := range c {
		cum += c[i].p
		if cum > p {
			return c[:i+1]
		}
	}
	return c
}

// topNSigma keeps the candidates whose logit is within n standard
// deviations of the best (llama.cpp's top-n-sigma; the mean and deviation
// are over the finite logits). The best is always kept.
func topNSigma(c []candidate, n float32) []candidate {
	if len(c) <= 1 {
		return c
	}
	maxLogit := negInf
	var sum float64
	valid := 0
	for _, x := range c {
		if x.logit > negInf {
			maxLogit = max(maxLogit, x.logit)
			sum += float64(x.logit)
			valid++
		}
	}
	if valid == 0 {
		return c
	}
	mean := sum / float64(valid)
	var acc float64
	for _, x := range c {
		if x.logit > negInf {
			d := float64(x.logit) - mean
			acc += d * d
		}
	}
	std := math.Sqrt(acc / float64(valid))
	cut := float64(maxLogit) - float64(n)*std
	k := 0
	for _, x := range c {
		if float64(x.logit) >= cut {
			c[k] = x
			k++
		}
	}
	return c[:k]
}

// xtc is llama.cpp's "exclude top choices": with probability
// XTCProbability it removes every candidate at least XTCThreshold likely
// except the least likely of them. It draws its chance from the
// sequence's stream. It returns c sorted when it sorted it.
func (s *Sampler) xtc(c []candidate, sorted bool) ([]candidate, bool) {
	if len(c) < 2 {
		return c, sorted
	}
	if chance := float32(s.rng.Float64()); chance > s.p.XTCProbability {
		return c, sorted
	}
	softmax(c, 1)
	slices.SortFunc(c, byLogitDesc)
	last := 0
	for i := range c {
		if c[i].p <= 0 || c[i].p < s.p.XTCThreshold {
			break
		}
		last = i
	}
	return c[last:], true
}
