package decode

// The operations on a candidate list that the sampling chain is built
// from (cuts, temperature, softmax, selection), and the log-probabilities.

import (
	"math"
	"slices"
)

// alive reports whether some candidate has a finite logit.
func alive(c []candidate) bool {
	for i := range c {
		if c[i].logit > negInf {
			return true
		}
	}
	return false
}

// negInf is float32 -Inf.
var negInf = float32(math.Inf(-1))

// finite maps a logit onto what sampling works with: NaN is -Inf (never
// picked) and +Inf the largest float32, so that differences of logits are
// never NaN.
func finite(l float32) float32 {
	switch {
	case l != l:
		return negInf
	case l > math.MaxFloat32:
		return math.MaxFloat32
	}
	return l
}

// drawFrom turns c into probabilities (temperature already applied) and
// returns the first candidate, in c's order, whose cumulative probability
// passes u.
func drawFrom(c []candidate, u float32) int32 {
	u *= softmax(c, 1)
	var cum float32
	for _, x := range c {
		cum += x.p
		if u < cum {
			return x.id
		}
	}
	// Rounding left u at or past the total: take the last token with any weight.
	for i := len(c) - 1; i >= 0; i-- {
		if c[i].p > 0 {
			return c[i].id
		}
	}
	return argmax(c)
}

// applyPenalties applies the repeat, presence and frequency penalties to
// every candidate of c whose token is in the window, whatever c's order.
func (s *Sampler) applyPenalties(c []candidate) {
	if s.counts == nil {
		return
	}
	rp := s.p.RepeatPenalty
	for i := range c {
		n := s.counts[c[i].id]
		if n <= 0 {
			continue
		}
		l := c[i].logit
		if rp != 0 && rp != 1 {
			if l <= 0 {
				l *= rp
			} else {
				l /= rp
			}
		}
		c[i].logit = finite(l - (float32(n)*s.p.FrequencyPenalty + s.p.PresencePenalty))
	}
}

// minP keeps the candidates at least p times as likely as the best, and
// always the best.
func minP(c []candidate, p float32) []candidate {
	maxLogit := c[argmaxIndex(c)].logit
	if maxLogit == negInf {
		return c
	}
	// p_i >= MinP * p_max  <=>  logit_i >= maxLogit + log(MinP)
	cut := maxLogit + float32(math.Log(float64(p)))
	n := 0
	for _, x := range c {
		if x.logit >= cut {
			c[n] = x
			n++
		}
	}
	if n == 0 { // MinP > 1 asks for more than the best: keep the best (llama.cpp keeps one)
		c[0] = c[argmaxIndex(c)]
		n = 1
	}
	return c[:n]
}

// temperature scales the logits of c by 1/t after shifting the best to 0
// (the shift changes no probability and keeps every value finite or -Inf);
// at t <= 0 only the best candidate is kept, as llama.cpp does.
func temperature(c []candidate, t float32) []candidate {
	best := argmaxIndex(c)
	if t <= 0 {
		c[0], c[best] = c[best], c[0]
		return c[:1]
	}
	maxLogit := c[best].logit
	if t == 1 || maxLogit == negInf {
		return c
	}
	for i := range c {
		c[i].logit = (c[i].logit - maxLogit) / t
	}
	return c
}

// topPPrefix is how many candidates topP sorts before it falls back to
// sorting them all.
const topPPrefix = 256

// topP keeps the smallest set of best candidates whose probability (at
// temperature 1, over all of c) reaches p, best first. Unless c is already
// sorted, it sorts only the best topPPrefix when they reach p, which they
// usually do.
func topP(c []candidate, p float32, sorted bool) []candidate {
	softmax(c, 1)
	if !sorted {
		k := min(len(c), topPPrefix)
		selectTop(c, k)
		slices.SortFunc(c[:k], byLogitDesc)
		var mass float32
		for _, x := range c[:k] {
			mass += x.p
		}
		if mass < p {
			slices.SortFunc(c, byLogitDesc)
		}
	}
	var cum float32
	for i := range c {
		cum += c[i].p
		if cum >= p {
			return c[:i+1]
		}
	}
	return c
}

// topLogprobs fills s.top with the TopLogprobs best tokens of logits, best
// first, by insertion into a buffer of that size.
func (s *Sampler) topLogprobs(logits []float32, lse float32) []TokenLogprob {
	n := s.p.TopLogprobs
	top := s.top[:0]
	if n == 0 {
		return top
	}
	for i, l := range logits {
		l = finite(l)
		if len(top) == n && l <= top[n-1].Logprob {
			continue
		}
		if len(top) < n {
			top = append(top, TokenLogprob{})
		}
		j := len(top) - 1
		for j > 0 && top[j-1].Logprob < l {
			top[j] = top[j-1]
			j--
		}
		top[j] = TokenLogprob{ID: int32(i), Logprob: l}
	}
	for i := range top {
		top[i].Logprob = clampLogprob(top[i].Logprob - lse)
	}
	s.top = top
	return top
}

// byLogitDesc orders candidates by logit, highest first, ties by lower id,
// so that the order is total and sampling reproducible.
func byLogitDesc(a, b candidate) int {
	switch {
	case a.logit > b.logit:
		return -1
	case a.logit < b.logit:
		return 1
	}
	return int(a.id - b.id)
}

// selectTop moves the k best candidates (by byLogitDesc) into c[:k], in
// no particular order. c[:k] is kept as a heap whose root is the worst of
// the best so far, so most candidates cost one comparison.
func selectTop(c []candidate, k int) {
	h := c[:k]
	for i := k/2 - 1; i >= 0; i-- {
		siftDown(h, i)
	}
	for i := k; i < len(c); i++ {
		if byLogitDesc(c[i], h[0]) < 0 {
			h[0], c[i] = c[i], h[0]
			siftDown(h, 0)
		}
	}
}

// siftDown restores the heap property below i: a parent is never better
// than its children.
func siftDown(h []candidate, i int) {
	for {
		worst := i
		if l := 2*i + 1; l < len(h) && byLogitDesc(h[l], h[worst]) > 0 {
			worst = l
		}
		if r := 2*i + 2; r < len(h) && byLogitDesc(h[r], h[worst]) > 0 {
			worst = r
		}
		if worst == i {
			return
		}
		h[i], h[worst] = h[worst], h[i]
		i = worst
	}
}

// softmax sets c[i].p to exp((logit_i - max) / temp) and returns their sum
// (the values are left unnormalized when the caller only draws from them).
func softmax(c []candidate, temp float32) float32 {
	maxLogit := c[argmaxIndex(c)].logit
	if maxLogit == negInf {
		for i := range c {
			c[i].p = 0
		}
		return 0
	}
	var sum float32
	for i := range c {
		p := float32(math.Exp(float64((c[i].logit - maxLogit) / temp)))
		c[i].p = p
		sum += p
	}
	if sum > 0 {
		for i := range c {
			c[i].p /= sum
		}
		return 1
	}
	return sum
}

// argmaxIndex returns the index of the best candidate (lowest id on ties).
func argmaxIndex(c []candidate) int {
	best := 0
	for i := 1; i < len(c); i++ {
		if byLogitDesc(c[i], c[best]) < 0 {
			best = i
		}
	}
	return best
}

// argmaxLogits returns the index of the largest logit, the lowest on ties,
// as argmax does over candidates made from the same logits (NaN counts as
// -Inf); 0 when no logit is above -Inf.
func argmaxLogits(logits []float32) int32 {
	best, _ := argmaxFinite(logits)
	return best
}

// argmaxFinite is argmaxLogits that also reports whether the best logit
// is above -Inf.
func argmaxFinite(logits []float32) (best int32, ok bool) {
	m := negInf
	for i, l := range logits {
		if l > m {
			m, best = l, int32(i)
		}
	}
	return best, m > negInf
}

// argmax returns the id of the best candidate.
func argmax(c []candidate) int32 { return c[argmaxIndex(c)].id }

// logSumExp returns log(sum(exp(x))) computed stably.
// x is read through finite, so NaN counts as -Inf and +Inf as the largest float.
func logSumExp(x []float32) float32 {
	m := negInf
	for _, v := range x {
		if v := finite(v); v > m {
			m = v
		}
	}
	if m == negInf {
		return m
	}
	var sum float64
	for _, v := range x {
		sum += math.Exp(float64(finite(v) - m))
	}
	return m + float32(math.Log(sum))
}

// minLogprob is the lowest log-probability reported (OpenAI's floor for
// impossible tokens), so that every reported value is a finite number.
const minLogprob = -9999

func clampLogprob(l float32) float32 {
	if !(l >= minLogprob) { // also NaN
		return minLogprob
	}
	return l
}
