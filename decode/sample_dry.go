package decode

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// TokenText gives a sampler the text of the vocabulary's tokens, which DRY
// needs to find the tokens its sequence breakers can begin with.
// *tokenizer.Tokenizer implements it.
type TokenText interface {
	// TokenBytes returns the bytes token id stands for (control tokens:
	// their text).
	TokenBytes(id int32) []byte
	// Encode turns text into tokens.
	Encode(text string, addSpecial, parseSpecial bool) ([]int32, error)
}

// DRY's bounds, as llama.cpp's: breakers are cut to dryMaxBreakerLen
// bytes and the tokens after a breaker's first to dryMaxBreakerTail.
const (
	maxDRYBreakers    = 64
	dryMaxBreakerLen  = 40
	dryMaxBreakerTail = 20
	dryMaxLogFloat    = 88.7228391 // log of the largest float32
)

// defaultDRYBreakers are llama.cpp's default sequence breakers, used when
// DRYSequenceBreakers is nil.
var defaultDRYBreakers = []string{"\n", ":", "\"", "*"}

// dryActive reports whether DRY penalizes anything (llama.cpp: a non-zero
// multiplier and a base of at least 1).
func dryActive(p SamplerParams) bool { return p.DRYMultiplier != 0 && p.DRYBase >= 1 }

// dryState is DRY's view of the sequence: its recent tokens and the
// sequence breakers, with buffers for one application.
type dryState struct {
	mult, base float32
	allowed    int
	// breakers maps a token to the tails of the sequence breakers that it
	// can begin (tokens after it); an empty tail is a breaker of one token.
	breakers map[int32][][]int32

	hist  []int32 // ring buffer of the last tokens, at most limit
	hpos  int     // next write index into hist once it is full
	limit int     // tokens DRY looks back at

	rev     []int32 // [len(hist)] the history, most recent first
	z       []int32 // [len(hist)] z[k]: tokens rev[k:] shares with rev from the start
	maxRep  []int32 // [vocab] 1 + the longest repeat each token would extend; 0 when none
	touched []int32 // ids whose maxRep is set
}

// newDRY builds DRY's state: the sequence breakers are found in the
// vocabulary by their text, as llama.cpp does.
func newDRY(p SamplerParams, vocab int, text TokenText) (*dryState, error) {
	d := &dryState{
		mult: p.DRYMultiplier, base: p.DRYBase, allowed: p.DRYAllowedLength,
		breakers: map[int32][][]int32{},
		limit:    p.DRYPenaltyLastN,
		maxRep:   make([]int32, vocab),
	}
	if d.limit <= 0 {
		d.limit = maxPenaltyLastN
	}
	breakers := p.DRYSequenceBreakers
	if breakers == nil {
		breakers = defaultDRYBreakers
	}
	for _, b := range breakers {
		if b == "" {
			continue
		}
		if text == nil {
			return nil, fmt.Errorf("sampler: DRY sequence breakers need the vocabulary's token text")
		}
		if len(b) > dryMaxBreakerLen {
			b = b[:dryMaxBreakerLen]
		}
		if err := d.addBreaker(b, vocab, text); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// addBreaker records every token whose text contains breaker b, and every
// token whose text ends with a prefix of b, with the tokens of the rest of
// b as its tail (llama.cpp's get_overlapping_token_sequences).
func (d *dryState) addBreaker(b string, vocab int, text TokenText) error {
	for id := int32(0); int(id) < vocab; id++ {
		word := string(text.TokenBytes(id))
		if strings.Contains(word, b) {
			d.addTail(id, nil)
			continue
		}
		for pos := strings.IndexByte(word, b[0]); pos >= 0; {
			// word[pos:] is a proper prefix of b when it matches b's start.
			rest := word[pos:]
			if strings.HasPrefix(b, rest) {
				tail, err := text.Encode(b[len(rest):], false, false)
				if err != nil {
					return fmt.Errorf("sampler: DRY sequence breaker %q: %w", b, err)
				}
				if len(tail) > dryMaxBreakerTail {
					tail = tail[:dryMaxBreakerTail]
				}
				d.addTail(id, tail)
			}
			next := strings.IndexByte(word[pos+1:], b[0])
			if next < 0 {
				break
			}
			pos += 1 + next
		}
	}
	return nil
}

func (d *dryState) addTail(id int32, tail []int32) {
	for _, t := range d.breakers[id] {
		if slices.Equal(t, tail) {
			return
		}
	}
	d.breakers[id] = append(d.breakers[id], tail)
}

// accept appends a token to the history.
func (d *dryState) accept(tok int32) {
	if len(d.hist) < d.limit {
		d.hist = append(d.hist, tok)
		return
	}
	d.hist[d.hpos] = tok
	d.hpos = (d.hpos + 1) % d.limit
}

// at returns the token i steps back from the most recent (0: the last).
func (d *dryState) at(i int) int32 {
	n := len(d.hist)
	if n < d.limit {
		return d.hist[n-1-i]
	}
	return d.hist[(d.hpos-1-i+2*n)%n]
}

// apply subtracts DRY's penalty from the candidates that would extend a
// repeat of the history longer than the allowed length:
// mult * base^(length - allowed), the exponent bounded so the penalty
// stays finite.
func (d *dryState) apply(c []candidate) {
	n := len(d.hist)
	if n <= d.allowed || n < 2 {
		return
	}
	// Step 1: a sequence breaker in the history limits the length of a repeat.
	limit := n
	for i := 0; i < n; i++ {
		tails, ok := d.breakers[d.at(i)]
		if !ok {
			continue
		}
		longest := -1
		for _, t := range tails {
			if len(t) <= longest || len(t) > i {
				continue
			}
			match := true
			for off, tok := range t {
				if d.at(i-off-1) != tok {
					match = false
					break
				}
			}
			if match {
				longest = len(t)
			}
		}
		if longest >= 0 {
			limit = i - longest
			break
		}
	}
	if limit < d.allowed {
		return
	}
	// Step 2: for each k, how many of the most recent tokens repeat at k
	// steps back: the Z-function of the reversed history.
	d.rev = d.rev[:0]
	for i := 0; i < n; i++ {
		d.rev = append(d.rev, d.at(i))
	}
	d.z = zFunction(d.rev, d.z[:0])
	// Step 3: a repeat at k steps back would be extended by the token that
	// followed it, rev[k-1].
	for k := 1; k < n; k++ {
		rep := min(int(d.z[k]), limit)
		if rep < d.allowed {
			continue
		}
		tok := d.rev[k-1]
		if d.maxRep[tok] == 0 {
			d.touched = append(d.touched, tok)
		}
		d.maxRep[tok] = max(d.maxRep[tok], int32(rep)+1)
	}
	// Step 4: penalize, except single-token breakers.
	maxExp := 0
	if d.base > 1.000001 {
		maxExp = int(dryMaxLogFloat / math.Log(float64(d.base)))
	}
	for i := range c {
		rep := d.maxRep[c[i].id] // the repeat's length plus one; 0: none
		if rep == 0 || d.singleBreaker(c[i].id) {
			continue
		}
		exp := int(rep) - 1 - d.allowed
		if maxExp > 0 && exp > maxExp {
			exp = maxExp
		}
		pen := float64(d.mult) * math.Pow(float64(d.base), float64(exp))
		c[i].logit = finite(float32(float64(c[i].logit) - pen))
	}
	for _, tok := range d.touched {
		d.maxRep[tok] = 0
	}
	d.touched = d.touched[:0]
}

// singleBreaker reports whether id alone is a sequence breaker.
func (d *dryState) singleBreaker(id int32) bool {
	for _, t := range d.breakers[id] {
		if len(t) == 0 {
			return true
		}
	}
	return false
}

// zFunction appends to z, for each k, the length of the longest common
// prefix of s and s[k:] (z[0] = len(s)), in linear time.
func zFunction(s []int32, z []int32) []int32 {
	n := len(s)
	if cap(z) < n {
		z = make([]int32, n)
	}
	z = z[:n]
	if n == 0 {
		return z
	}
	z[0] = int32(n)
	l, r := 0, 0 // s[l:r] is the rightmost window known to match a prefix
	for k := 1; k < n; k++ {
		m := 0
		if k < r {
			m = min(int(z[k-l]), r-k)
		}
		for k+m < n && s[m] == s[k+m] {
			m++
		}
		z[k] = int32(m)
		if k+m > r {
			l, r = k, k+m
		}
	}
	return z
}
