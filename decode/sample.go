package decode

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// SamplerParams says how one request picks its next token. The zero value
// means greedy decoding without penalties.
type SamplerParams struct {
	Temperature      float32           // <= 0: greedy (argmax)
	TopK             int               // keep the K most likely tokens; <= 0: off
	TopP             float32           // keep the smallest set whose probability reaches P; >= 1 or <= 0: off
	MinP             float32           // drop tokens less likely than MinP times the most likely; <= 0: off
	RepeatPenalty    float32           // divide positive (multiply negative) logits of recent tokens; 0 or 1: off
	PresencePenalty  float32           // subtracted once from the logit of every recent token
	FrequencyPenalty float32           // subtracted from a recent token's logit once per occurrence
	PenaltyLastN     int               // how many recent tokens the penalties look at; <= 0: penalties off
	LogitBias        map[int32]float32 // added to the logit of a token; -Inf bans it
	Seed             uint64            // seeds the request's own random stream
	Logprobs         bool              // report the log-probability of each sampled token
	TopLogprobs      int               // also report this many most likely alternatives (0..MaxTopLogprobs)

	// llama.cpp's further samplers, with its definitions. Their zero values
	// turn them off.
	TypicalP            float32  // locally typical sampling; >= 1 or <= 0: off
	TopNSigma           float32  // keep logits within TopNSigma standard deviations of the top; <= 0: off
	XTCProbability      float32  // chance per token of excluding the top choices (XTC); 0: off
	XTCThreshold        float32  // XTC excludes all but the least likely of the tokens above this probability
	Mirostat            int      // 0: off; 1: Mirostat; 2: Mirostat 2.0 (replaces top-k/top-p/min-p/typical)
	MirostatTau         float32  // Mirostat's target surprise
	MirostatEta         float32  // Mirostat's learning rate
	DRYMultiplier       float32  // DRY repetition penalty strength; 0: off
	DRYBase             float32  // DRY's exponential base
	DRYAllowedLength    int      // repeats up to this long are not penalized by DRY
	DRYPenaltyLastN     int      // how far back DRY looks; <= 0: the whole sequence
	DRYSequenceBreakers []string // strings that end a DRY match
	Samplers            []string // order of the truncating samplers (llama.cpp names); nil: the default order
}

// MaxTopLogprobs is the largest number of alternatives a request may ask for.
const MaxTopLogprobs = 20

// TokenLogprob is one token with its log-probability under the model's
// distribution (the raw logits, before penalties and truncation).
type TokenLogprob struct {
	ID      int32
	Logprob float32
}

// Sampled is the outcome of one sampling step.
type Sampled struct {
	Token   int32
	Logprob float32        // log-probability of Token; set when SamplerParams.Logprobs
	Top     []TokenLogprob // most likely tokens, best first; aliases the sampler's buffer until the next Sample
}

// candidate is one token id with its working logit and probability.
type candidate struct {
	id    int32
	logit float32
	p     float32
}

// Sampler turns a row of logits into the next token for one sequence. It
// keeps the sequence's recent tokens (for the penalties) and its own random
// stream, so a seeded sequence samples the same tokens whatever else runs
// beside it. All buffers are sized once in NewSampler; Sample and Accept do
// not allocate.
type Sampler struct {
	p     SamplerParams
	vocab int
	rng   *rand.Rand

	cands  []candidate    // [vocab] working copy of the logits
	bias   []TokenLogprob // logit bias entries (ID, added value), sorted by ID
	window []int32        // [PenaltyLastN] ring buffer of recent tokens
	wpos   int            // next write index into window
	wlen   int            // tokens held in window
	counts []int32        // [vocab] occurrences of each token in window; nil when penalties are off
	top    []TokenLogprob // [TopLogprobs] best alternatives of the last step
}

// NewSampler validates p and sizes the buffers for a vocabulary of the given size.
func NewSampler(p SamplerParams, vocab int) (*Sampler, error) {
	if vocab <= 0 {
		return nil, fmt.Errorf("sampler: vocabulary size %d", vocab)
	}
	if p.TopLogprobs < 0 || p.TopLogprobs > MaxTopLogprobs {
		return nil, fmt.Errorf("sampler: top_logprobs %d outside 0..%d", p.TopLogprobs, MaxTopLogprobs)
	}
	for _, f := range []float32{p.Temperature, p.TopP, p.MinP, p.RepeatPenalty, p.PresencePenalty, p.FrequencyPenalty} {
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return nil, fmt.Errorf("sampler: parameter %v is not a finite number", f)
		}
	}
	if p.RepeatPenalty < 0 {
		return nil, fmt.Errorf("sampler: repeat penalty %v is negative", p.RepeatPenalty)
	}
	if err := checkExtended(p); err != nil {
		return nil, err
	}
	s := &Sampler{
		p:     p,
		vocab: vocab,
		rng:   rand.New(rand.NewPCG(p.Seed, p.Seed^0x9e3779b97f4a7c15)),
		cands: make([]candidate, vocab),
		top:   make([]TokenLogprob, 0, p.TopLogprobs),
	}
	for id, b := range p.LogitBias {
		if id < 0 || int(id) >= vocab {
			return nil, fmt.Errorf("sampler: logit bias for token %d outside vocabulary of %d", id, vocab)
		}
		s.bias = append(s.bias, TokenLogprob{ID: id, Logprob: b})
	}
	slices.SortFunc(s.bias, func(a, b TokenLogprob) int { return int(a.ID - b.ID) })
	if s.penalized() {
		s.window = make([]int32, p.PenaltyLastN)
		s.counts = make([]int32, vocab)
	}
	return s, nil
}

// penalized reports whether any penalty is active.
func (s *Sampler) penalized() bool {
	if s.p.PenaltyLastN <= 0 {
		return false
	}
	return (s.p.RepeatPenalty != 0 && s.p.RepeatPenalty != 1) || s.p.PresencePenalty != 0 || s.p.FrequencyPenalty != 0
}

// Accept records a token of the sequence (prompt or generated) for the penalties.
func (s *Sampler) Accept(tok int32) {
	if s.counts == nil || tok < 0 || int(tok) >= s.vocab {
		return
	}
	if s.wlen == len(s.window) {
		s.counts[s.window[s.wpos]]--
	} else {
		s.wlen++
	}
	s.window[s.wpos] = tok
	s.counts[tok]++
	s.wpos = (s.wpos + 1) % len(s.window)
}

// Sample picks the next token from logits, a row of VocabSize values that
// it does not modify. It does not Accept the token.
func (s *Sampler) Sample(logits []float32) (Sampled, error) {
	return s.SampleDrawn(logits, s.draw())
}

// draw takes the next uniform number in [0, 1) from the sequence's stream
// when the sampler samples at a temperature above 0 (one per token), and
// returns 0 without taking one at temperature 0.
func (s *Sampler) draw() float32 {
	if s.p.Temperature <= 0 {
		return 0
	}
	return float32(s.rng.Float64())
}

// OnDevice reports whether an engine may pick this sampler's tokens where
// the logits are (Picker): no penalties, logit bias or log-probabilities.
func (s *Sampler) OnDevice() bool {
	return s.counts == nil && len(s.bias) == 0 && !s.p.Logprobs && s.p.TopLogprobs == 0
}

// Pick is the device form of the next pick, for a sampler that is
// OnDevice: it takes the random draw Sample would take, so a seeded
// sequence picks the same tokens on either side. SampleDrawn with the same
// U picks on the host what the device could not.
func (s *Sampler) Pick() Pick {
	return Pick{Temperature: s.p.Temperature, TopK: s.p.TopK, TopP: s.p.TopP, MinP: s.p.MinP, U: s.draw()}
}

// SampleDrawn is Sample with the random draw u already taken (by Pick);
// u is unused at temperature 0.
func (s *Sampler) SampleDrawn(logits []float32, u float32) (Sampled, error) {
	if len(logits) != s.vocab {
		return Sampled{}, fmt.Errorf("sampler: %d logits for a vocabulary of %d", len(logits), s.vocab)
	}
	var tok int32
	if s.p.Temperature <= 0 && len(s.bias) == 0 && s.counts == nil {
		// Plain greedy: the raw logits decide, with no working copy.
		tok = argmaxLogits(logits)
	} else {
		for i, l := range logits {
			s.cands[i] = candidate{id: int32(i), logit: l}
		}
		for _, b := range s.bias {
			s.cands[b.ID].logit += b.Logprob
		}
		s.applyPenalties()
		if s.p.Temperature <= 0 {
			tok = argmax(s.cands)
		} else {
			tok = s.sampleRandom(u)
		}
	}
	out := Sampled{Token: tok}
	if s.p.Logprobs || s.p.TopLogprobs > 0 {
		lse := logSumExp(logits)
		out.Logprob = logits[tok] - lse
		out.Top = s.topLogprobs(logits, lse)
	}
	return out, nil
}

// applyPenalties applies the repeat, presence and frequency penalties once
// to each distinct token of the window. counts of a token already handled
// are negated during the pass and restored after it.
func (s *Sampler) applyPenalties() {
	if s.counts == nil {
		return
	}
	rp := s.p.RepeatPenalty
	for _, tok := range s.window[:s.wlen] {
		n := s.counts[tok]
		if n <= 0 {
			continue
		}
		c := &s.cands[tok]
		if rp != 0 && rp != 1 {
			if c.logit <= 0 {
				c.logit *= rp
			} else {
				c.logit /= rp
			}
		}
		c.logit -= float32(n)*s.p.FrequencyPenalty + s.p.PresencePenalty
		s.counts[tok] = -n
	}
	for _, tok := range s.window[:s.wlen] {
		if s.counts[tok] < 0 {
			s.counts[tok] = -s.counts[tok]
		}
	}
}

// sampleRandom runs top-k, top-p, min-p and temperature over s.cands, in
// that order (as llama.cpp's default chain does), then draws a token with
// the uniform number u.
func (s *Sampler) sampleRandom(u float32) int32 {
	c := s.cands
	sorted := false
	if k := s.p.TopK; k > 0 && k < len(c) {
		selectTop(c, k)
		c = c[:k]
		slices.SortFunc(c, byLogitDesc)
		sorted = true
	}
	if s.p.TopP > 0 && s.p.TopP < 1 {
		c = topP(c, s.p.TopP, sorted)
	}
	if s.p.MinP > 0 {
		best := argmaxIndex(c)
		maxLogit := c[best].logit
		// p_i >= MinP * p_max  <=>  logit_i >= maxLogit + log(MinP)
		cut := maxLogit + float32(math.Log(float64(s.p.MinP)))
		n := 0
		for _, x := range c {
			if x.logit >= cut {
				c[n] = x
				n++
			}
		}
		if n == 0 { // a NaN maximum passes no cut: keep the best candidate
			c[0], n = c[best], 1
		}
		c = c[:n]
	}
	u *= softmax(c, s.p.Temperature)
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
	return c[0].id
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
		top[i].Logprob -= lse
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
// as argmax does over candidates made from the same logits.
func argmaxLogits(logits []float32) int32 {
	best := 0
	for i, l := range logits {
		if l > logits[best] {
			best = i
		}
	}
	return int32(best)
}

// argmax returns the id of the best candidate.
func argmax(c []candidate) int32 { return c[argmaxIndex(c)].id }

// logSumExp returns log(sum(exp(x))) computed stably.
func logSumExp(x []float32) float32 {
	m := float32(math.Inf(-1))
	for _, v := range x {
		if v > m {
			m = v
		}
	}
	if math.IsInf(float64(m), -1) {
		return m
	}
	var sum float64
	for _, v := range x {
		sum += math.Exp(float64(v - m))
	}
	return m + float32(math.Log(sum))
}

// checkExtended refuses the samplers beyond temperature, top-k, top-p,
// min-p and the penalties until they are implemented, so that no request
// silently gets other output than it asked for.
func checkExtended(p SamplerParams) error {
	switch {
	case p.TypicalP > 0 && p.TypicalP < 1:
		return fmt.Errorf("sampler: typical_p is not supported")
	case p.TopNSigma > 0:
		return fmt.Errorf("sampler: top_n_sigma is not supported")
	case p.XTCProbability > 0:
		return fmt.Errorf("sampler: xtc_probability is not supported")
	case p.Mirostat != 0:
		return fmt.Errorf("sampler: mirostat is not supported")
	case p.DRYMultiplier != 0:
		return fmt.Errorf("sampler: dry_multiplier is not supported")
	case p.Samplers != nil:
		return fmt.Errorf("sampler: samplers is not supported")
	}
	return nil
}
