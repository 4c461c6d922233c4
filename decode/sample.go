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
	Mirostat            int      // 0: off; 1: Mirostat; 2: Mirostat 2.0 (after logit bias and temperature it replaces the whole chain, penalties and DRY included, as in llama.cpp)
	MirostatTau         float32  // Mirostat's target surprise
	MirostatEta         float32  // Mirostat's learning rate
	DRYMultiplier       float32  // DRY repetition penalty strength; 0: off
	DRYBase             float32  // DRY's exponential base
	DRYAllowedLength    int      // repeats up to this long are not penalized by DRY
	DRYPenaltyLastN     int      // how far back DRY looks; <= 0: the whole sequence
	DRYSequenceBreakers []string // strings that end a DRY match; nil: llama.cpp's "\n", ":", "\"", "*"
	Samplers            []string // order of the chain (llama.cpp names, see parseOrder); nil: llama.cpp's default; Temperature <= 0 stays greedy

	// Constraint bans the tokens it does not allow, after the logit bias
	// (on the host, or on an engine that applies masks: MaskPicker); nil:
	// off. See sample_mask.go.
	Constraint Constraint
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
	aux   float32 // per-step scratch (typical sampling's distance from the entropy)
}

// Bounds of the history a sampler keeps, whatever the request asks: the
// API bounds them by the context, this is defence in depth.
const (
	maxPenaltyLastN = 1 << 20 // tokens PenaltyLastN and DRYPenaltyLastN may name
	maxSamplerSteps = 64      // entries of SamplerParams.Samplers
)

// Sampler turns a row of logits into the next token for one sequence. It
// keeps the sequence's recent tokens (for the penalties and DRY), its own
// random stream and Mirostat's state, so a seeded sequence samples the
// same tokens whatever else runs beside it. Buffers are sized in
// NewSampler (DRY's history grows up to its window); Sample and Accept do
// not allocate otherwise.
//
// Every input gives a pick or an error: NaN logits count as -Inf, +Inf
// logits as the largest float, and a step that would leave no candidate
// keeps the best one. When no token has a finite logit (all banned, or the
// model's row is all NaN) Sample returns an error.
type Sampler struct {
	p     SamplerParams
	vocab int
	rng   *rand.Rand
	order []samplerStep // the truncating chain, in order
	host  bool          // some active sampler runs only on the host
	chain bool          // some active sampler other than the constraint runs only on the host

	cands  []candidate    // [vocab] working copy of the logits
	bias   []TokenLogprob // logit bias entries (ID, added value), sorted by ID
	window []int32        // [PenaltyLastN] ring buffer of recent tokens
	wpos   int            // next write index into window
	wlen   int            // tokens held in window
	counts []int32        // [vocab] occurrences of each token in window; nil when penalties are off
	top    []TokenLogprob // [TopLogprobs] best alternatives of the last step
	mu     float32        // Mirostat's current maximum surprise (2*tau at the start)
	dry    *dryState      // DRY's history and buffers; nil when DRY is off
	mask   []uint64       // [(vocab+63)/64] tokens the constraint allows this step; nil without one
}

// NewSampler validates p and sizes the buffers for a vocabulary of the
// given size. DRY with sequence breakers needs the tokens' text: use
// NewSamplerText.
func NewSampler(p SamplerParams, vocab int) (*Sampler, error) {
	return NewSamplerText(p, vocab, nil)
}

// NewSamplerText is NewSampler with the vocabulary's token text, which DRY
// needs to find the tokens that start its sequence breakers; text may be
// nil when DRY is off or has no breakers.
func NewSamplerText(p SamplerParams, vocab int, text TokenText) (*Sampler, error) {
	if vocab <= 0 {
		return nil, fmt.Errorf("sampler: vocabulary size %d", vocab)
	}
	if err := checkParams(p); err != nil {
		return nil, err
	}
	order, err := parseOrder(p.Samplers)
	if err != nil {
		return nil, err
	}
	s := &Sampler{
		p:     p,
		vocab: vocab,
		rng:   rand.New(rand.NewPCG(p.Seed, p.Seed^0x9e3779b97f4a7c15)),
		order: order,
		cands: make([]candidate, vocab),
		top:   make([]TokenLogprob, 0, p.TopLogprobs),
		mu:    2 * p.MirostatTau,
	}
	for id, b := range p.LogitBias {
		if id < 0 || int(id) >= vocab {
			return nil, fmt.Errorf("sampler: logit bias for token %d outside vocabulary of %d", id, vocab)
		}
		if math.IsNaN(float64(b)) {
			return nil, fmt.Errorf("sampler: logit bias for token %d is not a number", id)
		}
		s.bias = append(s.bias, TokenLogprob{ID: id, Logprob: b})
	}
	slices.SortFunc(s.bias, func(a, b TokenLogprob) int { return int(a.ID - b.ID) })
	if s.penalized() {
		s.window = make([]int32, p.PenaltyLastN)
		s.counts = make([]int32, vocab)
	}
	if dryActive(p) {
		if s.dry, err = newDRY(p, vocab, text); err != nil {
			return nil, err
		}
	}
	if p.Constraint != nil {
		s.mask = make([]uint64, maskWords(vocab))
	}
	s.chain = p.Samplers != nil || p.Mirostat != 0 || s.dry != nil ||
		(p.TypicalP > 0 && p.TypicalP < 1) || p.TopNSigma > 0 || xtcActive(p)
	s.host = s.chain || p.Constraint != nil
	return s, nil
}

// penalized reports whether any penalty is active.
func (s *Sampler) penalized() bool {
	if s.p.PenaltyLastN <= 0 {
		return false
	}
	return (s.p.RepeatPenalty != 0 && s.p.RepeatPenalty != 1) || s.p.PresencePenalty != 0 || s.p.FrequencyPenalty != 0
}

// Accept records a token of the sequence (prompt or generated) for the
// penalties and DRY.
func (s *Sampler) Accept(tok int32) {
	if tok < 0 || int(tok) >= s.vocab {
		return
	}
	if s.dry != nil {
		s.dry.accept(tok)
	}
	if s.counts == nil {
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
// the logits are (Picker): no penalties, logit bias, log-probabilities or
// sampler that only the host runs (typical, top-n-sigma, XTC, Mirostat,
// DRY, a custom order).
func (s *Sampler) OnDevice() bool {
	return s.OnDeviceMasked() && s.p.Constraint == nil
}

// OnDeviceMasked reports whether an engine that applies masks (MaskPicker)
// may pick this sampler's tokens: OnDevice, or constrained with nothing
// else that only the host runs (greedy, or top-k, top-p, min-p and
// temperature, as the fast path of a constrained greedy pick asks).
func (s *Sampler) OnDeviceMasked() bool {
	return s.counts == nil && len(s.bias) == 0 && !s.p.Logprobs && s.p.TopLogprobs == 0 && !s.chain
}

// Pick is the device form of the next pick, for a sampler that is
// OnDevice or OnDeviceMasked: it takes the random draw Sample would take,
// so a seeded sequence picks the same tokens on either side. SampleDrawn
// with the same U picks on the host what the device could not. A
// constrained sampler's pick carries the constraint's mask of this step
// in the sampler's own buffer (Pick.Mask); when the constraint fails, the
// mask allows nothing, the device leaves the row to the host, and
// SampleDrawn reports the failure.
func (s *Sampler) Pick() Pick {
	p := Pick{Temperature: s.p.Temperature, TopK: s.p.TopK, TopP: s.p.TopP, MinP: s.p.MinP, U: s.draw()}
	if s.p.Constraint != nil {
		if err := s.p.Constraint.Allowed(s.mask); err != nil {
			clear(s.mask)
		}
		p.Mask = s.mask
	}
	return p
}

// errNoToken is returned when no token of the vocabulary can be picked.
var errNoToken = fmt.Errorf("sampler: no token has a finite logit (every token is banned, or the logits are not numbers)")

// errAllBanned is returned when the request's logit bias banned every
// token that was left: the request's fault, not the server's.
var errAllBanned = fmt.Errorf("%w: logit_bias bans every token left (%w)", ErrInvalidSampling, errNoToken)

// SampleDrawn is Sample with the random draw u already taken (by Pick);
// u is unused at temperature 0.
func (s *Sampler) SampleDrawn(logits []float32, u float32) (Sampled, error) {
	if len(logits) != s.vocab {
		return Sampled{}, fmt.Errorf("sampler: %d logits for a vocabulary of %d", len(logits), s.vocab)
	}
	var tok int32
	if s.p.Temperature <= 0 && len(s.bias) == 0 && s.counts == nil && !s.host {
		// Plain greedy: the raw logits decide, with no working copy.
		var ok bool
		if tok, ok = argmaxFinite(logits); !ok {
			return Sampled{}, errNoToken
		}
	} else if s.maskedGreedy() {
		var err error
		if tok, err = s.argmaxAllowed(logits); err != nil {
			return Sampled{}, err
		}
	} else {
		var err error
		if tok, err = s.sampleChain(logits, u); err != nil {
			return Sampled{}, err
		}
	}
	out := Sampled{Token: tok}
	if s.p.Logprobs || s.p.TopLogprobs > 0 {
		lse := logSumExp(logits)
		out.Logprob = clampLogprob(finite(logits[tok]) - lse)
		out.Top = s.topLogprobs(logits, lse)
	}
	return out, nil
}

// sampleChain copies the logits into s.cands, applies the logit bias,
// then runs Mirostat or the truncating chain and draws with u.
func (s *Sampler) sampleChain(logits []float32, u float32) (int32, error) {
	for i, l := range logits {
		s.cands[i] = candidate{id: int32(i), logit: finite(l)}
	}
	for _, b := range s.bias {
		c := &s.cands[b.ID]
		c.logit = finite(c.logit + b.Logprob)
	}
	if err := s.applyConstraint(s.cands); err != nil {
		return 0, err
	}
	c := s.cands
	if !alive(c) {
		if s.bannedAllowed(nil) {
			return 0, errAllBanned
		}
		return 0, errNoToken
	}
	if s.p.Mirostat != 0 {
		// As llama.cpp's common sampler: logit bias, temperature, Mirostat.
		c = temperature(c, s.p.Temperature)
		return s.mirostat(c, u), nil
	}
	sorted := false
	for _, st := range s.order {
		switch st {
		case stepPenalties:
			s.applyPenalties(c)
			sorted = false
			if !alive(c) {
				return 0, errNoToken
			}
		case stepDRY:
			if s.dry != nil {
				s.dry.apply(c)
				sorted = false
				if !alive(c) {
					return 0, errNoToken
				}
			}
		case stepTopK:
			if k := s.p.TopK; k > 0 && k < len(c) {
				selectTop(c, k)
				c = c[:k]
				slices.SortFunc(c, byLogitDesc)
				sorted = true
			}
		case stepTypical:
			if s.p.TypicalP > 0 && s.p.TypicalP < 1 {
				c = typical(c, s.p.TypicalP)
				sorted = false
			}
		case stepTopP:
			if s.p.TopP > 0 && s.p.TopP < 1 {
				c = topP(c, s.p.TopP, sorted)
				sorted = true
			}
		case stepMinP:
			if s.p.MinP > 0 {
				c = minP(c, s.p.MinP)
			}
		case stepXTC:
			if xtcActive(s.p) {
				c, sorted = s.xtc(c, sorted)
			}
		case stepTemperature:
			c = temperature(c, s.p.Temperature)
		case stepTopNSigma:
			if s.p.TopNSigma > 0 {
				c = topNSigma(c, s.p.TopNSigma)
			}
		}
	}
	if s.p.Temperature <= 0 {
		return argmax(c), nil
	}
	return drawFrom(c, u), nil
}
