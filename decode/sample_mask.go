package decode

import (
	"fmt"
	"math/bits"
)

// Constraint restricts the tokens a sequence may sample, such as a
// grammar's matcher (llmserve/grammar). The sampler asks it for the mask
// of every step and bans the tokens outside it after the logit bias; the
// caller advances it with AcceptSampled.
type Constraint interface {
	// Allowed sets mask, one bit per token (bit i%64 of word i/64), to
	// the tokens that may come next.
	Allowed(mask []uint64) error
	// Accept advances past a generated token.
	Accept(tok int32) error
	// Done reports whether the constrained text is complete: nothing but
	// an end token may follow.
	Done() bool
}

// maskWords is the length of a constraint mask for a vocabulary.
func maskWords(vocab int) int { return (vocab + 63) / 64 }

// applyConstraint bans every candidate the constraint does not allow this
// step; c holds the whole vocabulary in id order.
func (s *Sampler) applyConstraint(c []candidate) error {
	if s.p.Constraint == nil {
		return nil
	}
	if err := s.p.Constraint.Allowed(s.mask); err != nil {
		return fmt.Errorf("sampler: constraint: %w", err)
	}
	for w, bits := range s.mask {
		if bits == ^uint64(0) {
			continue
		}
		end := min(len(c), (w+1)*64)
		for i := w * 64; i < end; i++ {
			if bits>>(i&63)&1 == 0 {
				c[i].logit = negInf
			}
		}
	}
	if !alive(c) {
		if s.bannedAllowed(s.mask) {
			return fmt.Errorf("%w: logit_bias bans every token the constraint allows next", ErrInvalidSampling)
		}
		return fmt.Errorf("sampler: the constraint allows no token with a finite logit")
	}
	return nil
}

// bannedAllowed reports whether the logit bias bans (-Inf) a token that
// mask allows (every token when mask is nil): when no token is left, the
// request's own bias took it.
func (s *Sampler) bannedAllowed(mask []uint64) bool {
	for _, b := range s.bias {
		if b.Logprob == negInf && (mask == nil || int(b.ID)/64 < len(mask) && mask[b.ID/64]>>(b.ID&63)&1 == 1) {
			return true
		}
	}
	return false
}

// AcceptSampled records a generated token: Accept, then the constraint
// advances past it. Prompt tokens go to Accept alone.
func (s *Sampler) AcceptSampled(tok int32) error {
	s.Accept(tok)
	if s.p.Constraint == nil {
		return nil
	}
	if err := s.p.Constraint.Accept(tok); err != nil {
		return fmt.Errorf("sampler: constraint: %w", err)
	}
	return nil
}

// maskedGreedy reports whether the pick is simply the best allowed
// logit: greedy, with a constraint and nothing else that changes logits.
func (s *Sampler) maskedGreedy() bool {
	p := &s.p
	return p.Constraint != nil && p.Temperature <= 0 && len(s.bias) == 0 && s.counts == nil && s.dry == nil &&
		p.Samplers == nil && p.Mirostat == 0 && !(p.TypicalP > 0 && p.TypicalP < 1) && p.TopNSigma <= 0 && !xtcActive(*p)
}

// argmaxAllowed returns the allowed token with the best logit (lowest id
// on ties, NaN as -Inf, +Inf as the largest float, as sampleChain ranks
// them) without copying the logits: only the mask's set bits are read.
func (s *Sampler) argmaxAllowed(logits []float32) (int32, error) {
	if err := s.p.Constraint.Allowed(s.mask); err != nil {
		return 0, fmt.Errorf("sampler: constraint: %w", err)
	}
	best, m := int32(-1), negInf
	for w, word := range s.mask {
		for word != 0 {
			i := w*64 + bits.TrailingZeros64(word)
			word &= word - 1
			if i >= len(logits) {
				break
			}
			if l := finite(logits[i]); l > m {
				best, m = int32(i), l
			}
		}
	}
	if best < 0 {
		return 0, fmt.Errorf("sampler: the constraint allows no token with a finite logit")
	}
	return best, nil
}
