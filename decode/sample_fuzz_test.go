package decode

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

// letterText is a TokenText whose token i is the letter 'a'+i%26 (and ':'
// for ids 26 mod 27), one token per byte.
type letterText struct{}

func (letterText) TokenBytes(id int32) []byte {
	if id%27 == 26 {
		return []byte{':'}
	}
	return []byte{byte('a' + id%27)}
}

func (letterText) Encode(text string, _, _ bool) ([]int32, error) {
	out := make([]int32, 0, len(text))
	for i := 0; i < len(text); i++ {
		if text[i] == ':' {
			out = append(out, 26)
		} else {
			out = append(out, int32(text[i]-'a'))
		}
	}
	return out, nil
}

// FuzzSampler samples logits made from arbitrary bytes (NaN and ±Inf
// included) with arbitrary parameters: NewSampler either rejects the
// parameters or every Sample gives a token of the vocabulary that is
// neither banned nor NaN, with finite log-probabilities, or errNoToken.
func FuzzSampler(f *testing.F) {
	f.Add([]byte{0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 192, 127}, float32(1), 2, float32(0.9), float32(0.05),
		float32(1.1), float32(0), float32(0), 8, float32(0), float32(0), float32(0), float32(0), 0, float32(5), float32(0.1),
		float32(0), float32(0), 0, uint64(1), []byte{0, 1, 0, 1}, byte(0), false)
	f.Add([]byte{0, 0, 128, 255, 0, 0, 128, 127, 0, 0, 192, 255}, float32(0.5), 0, float32(0), float32(2),
		float32(0), float32(-1), float32(1e30), 3, float32(0.5), float32(1), float32(1), float32(0.1), 1, float32(3), float32(1),
		float32(0.8), float32(1.75), 2, uint64(7), []byte{2, 2, 2, 2, 2}, byte(1), true)
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8}, float32(1e-30), 100, float32(1e-9), float32(0),
		float32(3), float32(0), float32(0), 4, float32(0), float32(0), float32(0.5), float32(0), 2, float32(-3), float32(10),
		float32(1e30), float32(1e10), 0, uint64(9), []byte{0, 1, 0, 1, 0}, byte(2), false)
	f.Fuzz(func(t *testing.T, raw []byte, temp float32, topK int, topP, minP, rp, pp, fp float32, lastN int,
		typP, nSigma, xtcP, xtcT float32, miro int, tau, eta, dryM, dryB float32, dryA int, seed uint64,
		history []byte, order byte, logprobs bool) {
		vocab := len(raw) / 4
		if vocab == 0 || vocab > 64 || len(history) > 64 {
			return
		}
		logits := make([]float32, vocab)
		for i := range logits {
			logits[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		p := SamplerParams{
			Temperature: temp, TopK: topK, TopP: topP, MinP: minP,
			RepeatPenalty: rp, PresencePenalty: pp, FrequencyPenalty: fp, PenaltyLastN: lastN,
			TypicalP: typP, TopNSigma: nSigma, XTCProbability: xtcP, XTCThreshold: xtcT,
			Mirostat: miro, MirostatTau: tau, MirostatEta: eta,
			DRYMultiplier: dryM, DRYBase: dryB, DRYAllowedLength: dryA, DRYPenaltyLastN: lastN,
			DRYSequenceBreakers: []string{":", "ab"},
			Seed:                seed, Logprobs: logprobs,
			LogitBias: map[int32]float32{int32(int(order) % vocab): ninf},
		}
		if logprobs {
			p.TopLogprobs = 3
		}
		switch order % 4 {
		case 1:
			p.Samplers = []string{"temperature", "top_n_sigma", "xtc", "min_p", "top_p", "typ_p", "top_k", "dry", "penalties"}
		case 2:
			p.Samplers = []string{"top_k", "top_k", "temp"}
		case 3:
			p.Samplers = []string{}
		}
		if lastN > 1<<12 {
			return // the bound is tested elsewhere; keep the fuzzer's memory small
		}
		s, err := NewSamplerText(p, vocab, letterText{})
		if err != nil {
			return
		}
		banned := int32(int(order) % vocab)
		for _, h := range history {
			s.Accept(int32(h) % int32(vocab))
		}
		for step := 0; step < 3; step++ {
			got, err := s.Sample(logits)
			if err != nil {
				if !errors.Is(err, errNoToken) {
					t.Fatalf("Sample: %v", err)
				}
				return
			}
			tok := got.Token
			if tok < 0 || int(tok) >= vocab {
				t.Fatalf("token %d outside the vocabulary of %d", tok, vocab)
			}
			if tok == banned || logits[tok] != logits[tok] || logits[tok] == ninf {
				t.Fatalf("picked token %d with logit %v (banned: %d)", tok, logits[tok], banned)
			}
			if !finiteLogprobs(got) {
				t.Fatalf("log-probabilities %v %v are not finite", got.Logprob, got.Top)
			}
			s.Accept(tok)
		}
	})
}
