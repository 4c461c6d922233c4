package decode

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestOnDeviceMasked checks which constrained samplers an engine that
// applies masks may pick: the constraint must be the only host-only
// feature. Without a constraint OnDeviceMasked is OnDevice.
func TestOnDeviceMasked(t *testing.T) {
	tests := []struct {
		name   string
		p      SamplerParams
		masked bool
	}{
		{"greedy", SamplerParams{}, true},
		{"sampled", SamplerParams{Temperature: 0.8, TopK: 40, TopP: 0.9, MinP: 0.05, Seed: 1}, true},
		{"logit bias", SamplerParams{LogitBias: map[int32]float32{3: 1}}, false},
		{"penalties", SamplerParams{RepeatPenalty: 1.1, PenaltyLastN: 8}, false},
		{"logprobs", SamplerParams{Logprobs: true}, false},
		{"top logprobs", SamplerParams{TopLogprobs: 2}, false},
		{"typical", SamplerParams{Temperature: 1, TypicalP: 0.9}, false},
		{"top-n-sigma", SamplerParams{Temperature: 1, TopNSigma: 1}, false},
		{"xtc", SamplerParams{Temperature: 1, XTCProbability: 0.5, XTCThreshold: 0.1}, false},
		{"mirostat", SamplerParams{Temperature: 1, Mirostat: 2, MirostatTau: 5}, false},
		{"dry", SamplerParams{Temperature: 1, DRYMultiplier: 0.8, DRYBase: 1.75, DRYSequenceBreakers: []string{}}, false},
		{"order", SamplerParams{Temperature: 1, Samplers: []string{"top_k", "temperature"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plain := newSampler(t, tt.p, 100)
			if plain.OnDeviceMasked() != plain.OnDevice() {
				t.Errorf("unconstrained: OnDeviceMasked %v, OnDevice %v", plain.OnDeviceMasked(), plain.OnDevice())
			}
			if m := plain.Pick().Mask; m != nil {
				t.Errorf("unconstrained pick carries a mask of %d words", len(m))
			}
			p := tt.p
			p.Constraint = &setConstraint{allowed: []int32{1, 2}}
			s := newSampler(t, p, 100)
			if s.OnDevice() {
				t.Error("constrained: OnDevice, want only OnDeviceMasked")
			}
			if got := s.OnDeviceMasked(); got != tt.masked {
				t.Errorf("constrained: OnDeviceMasked %v, want %v", got, tt.masked)
			}
		})
	}
}

// TestPickMask checks that a constrained pick's mask holds the words the
// constraint's Allowed writes, step after step, in the sampler's own
// buffer, and that a failing constraint gives a mask that allows nothing
// and the failure from the host's pick.
func TestPickMask(t *testing.T) {
	const vocab = 300 // not a multiple of 64
	rng := rand.New(rand.NewPCG(3, 4))
	c := &setConstraint{}
	s := newSampler(t, SamplerParams{Constraint: c}, vocab)
	for step := range 20 {
		c.allowed = c.allowed[:0]
		for id := range int32(vocab) {
			if rng.IntN(7) == 0 {
				c.allowed = append(c.allowed, id)
			}
		}
		want := make([]uint64, maskWords(vocab))
		if err := c.Allowed(want); err != nil {
			t.Fatal(err)
		}
		p := s.Pick()
		if !slices.Equal(p.Mask, want) {
			t.Fatalf("step %d: mask %x, want %x", step, p.Mask, want)
		}
		if &p.Mask[0] != &s.mask[0] {
			t.Fatalf("step %d: the mask is not the sampler's buffer", step)
		}
	}
	c.allowed, c.fail = []int32{5}, errors.New("broken")
	p := s.Pick()
	if len(p.Mask) != maskWords(vocab) || slices.ContainsFunc(p.Mask, func(w uint64) bool { return w != 0 }) {
		t.Fatalf("failing constraint: mask %x, want %d zero words", p.Mask, maskWords(vocab))
	}
	if got, err := s.SampleDrawn(make([]float32, vocab), p.U); err == nil {
		t.Fatalf("failing constraint: the host picked %d, want the constraint's error", got.Token)
	}
}

// devicePickRef is what an engine that applies masks must do with a
// pick: ban what the mask does not allow, then pick as without one (a
// fresh unconstrained sampler with the pick's parameters and draw); -1
// when no allowed token has a finite logit.
func devicePickRef(t *testing.T, p *Pick, row []float32) int32 {
	t.Helper()
	x := row
	if p.Mask != nil {
		x = make([]float32, len(row))
		alive := false
		for i, l := range row {
			x[i] = negInf
			if p.Mask[i/64]>>(i%64)&1 == 1 {
				x[i] = finite(l)
				alive = alive || x[i] > negInf
			}
		}
		if !alive {
			return -1
		}
	}
	s, err := NewSampler(SamplerParams{Temperature: p.Temperature, TopK: p.TopK, TopP: p.TopP, MinP: p.MinP}, len(row))
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.SampleDrawn(x, p.U)
	if err != nil {
		t.Fatal(err)
	}
	return got.Token
}

// TestMaskedPickMatchesHost checks the rule a device relies on: banning
// the disallowed tokens and picking as without a constraint gives the
// token the host's constrained sampler gives, in every mode, with masks
// that allow everything, one token or nothing, and logits with NaN,
// infinities and ties.
func TestMaskedPickMatchesHost(t *testing.T) {
	const vocab = 1000
	params := []SamplerParams{
		{},
		{Temperature: 0.8},
		{Temperature: 1, TopK: 40},
		{Temperature: 0.7, TopK: 40, TopP: 0.9, MinP: 0.05},
		{Temperature: 1.3, TopP: 0.95},
		{Temperature: 1, MinP: 0.1},
		{Temperature: 1, TopK: 1},
	}
	masks := []string{"all", "one", "none", "random", "sparse"}
	rng := rand.New(rand.NewPCG(7, 8))
	compared := 0
	for pi, p := range params {
		for _, kind := range masks {
			t.Run(fmt.Sprintf("params%d/%s", pi, kind), func(t *testing.T) {
				c := &setConstraint{}
				p.Constraint, p.Seed = c, uint64(pi)
				host := newSampler(t, p, vocab)
				dev := newSampler(t, p, vocab) // the same seed: the same draws
				logits := make([]float32, vocab)
				for trial := range 30 {
					c.allowed = c.allowed[:0]
					for id := range int32(vocab) {
						switch kind {
						case "all":
							c.allowed = append(c.allowed, id)
						case "random":
							if rng.IntN(2) == 0 {
								c.allowed = append(c.allowed, id)
							}
						case "sparse":
							if rng.IntN(100) == 0 {
								c.allowed = append(c.allowed, id)
							}
						}
					}
					if kind == "one" {
						c.allowed = append(c.allowed, rng.Int32N(vocab))
					}
					for i := range logits {
						switch rng.IntN(40) {
						case 0:
							logits[i] = float32(math.NaN())
						case 1:
							logits[i] = float32(math.Inf(1 - 2*rng.IntN(2)))
						default:
							logits[i] = float32(rng.IntN(9)) / 2 // many ties
						}
					}
					pk := dev.Pick()
					if !dev.OnDeviceMasked() || pk.Mask == nil {
						t.Fatal("a constrained sampler of the device's kinds gives no masked pick")
					}
					want, herr := host.Sample(logits)
					got := devicePickRef(t, &pk, logits)
					switch {
					case got < 0 && herr == nil:
						t.Fatalf("trial %d: the device finds nothing allowed, the host picked %d", trial, want.Token)
					case got >= 0 && herr != nil:
						t.Fatalf("trial %d: the device picked %d, the host failed: %v", trial, got, herr)
					case got >= 0 && got != want.Token:
						t.Fatalf("trial %d (u %v): the device picked %d, the host %d", trial, pk.U, got, want.Token)
					case got < 0:
						// The fallback: the host picks with the same draw and fails too.
						if _, err := dev.SampleDrawn(logits, pk.U); err == nil {
							t.Fatalf("trial %d: nothing allowed, yet the host's fallback picked", trial)
						}
					}
					compared++
				}
			})
		}
	}
	if compared == 0 {
		t.Fatal("no pick compared")
	}
}
