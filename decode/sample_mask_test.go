package decode

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"testing"
	"unicode/utf8"

	"llmserve/grammar"
	"llmserve/internal/shared"
	"llmserve/model/tokenizer"
)

// setConstraint allows a fixed set of tokens and records what it accepts.
type setConstraint struct {
	allowed  []int32
	accepted []int32
	fail     error // returned by Allowed when set
}

func (c *setConstraint) Allowed(mask []uint64) error {
	clear(mask)
	for _, id := range c.allowed {
		mask[id/64] |= 1 << (id % 64)
	}
	return c.fail
}
func (c *setConstraint) Accept(tok int32) error { c.accepted = append(c.accepted, tok); return nil }
func (c *setConstraint) Done() bool             { return false }

// TestConstraintMasksAfterBias checks that banned tokens are never picked,
// whatever the logits and the logit bias say, greedy and sampled.
func TestConstraintMasksAfterBias(t *testing.T) {
	const vocab = 200
	for _, temp := range []float32{0, 1} {
		c := &setConstraint{allowed: []int32{3, 70, 199}}
		s, err := NewSampler(SamplerParams{Temperature: temp, Seed: 7, LogitBias: map[int32]float32{5: 100}, Constraint: c}, vocab)
		if err != nil {
			t.Fatal(err)
		}
		if s.OnDevice() {
			t.Fatal("a constrained sampler claims it can run on the device")
		}
		rng := rand.New(rand.NewPCG(1, 2))
		logits := make([]float32, vocab)
		for step := range 100 {
			for i := range logits {
				logits[i] = rng.Float32() * 10
			}
			logits[0] = 1000
			got, err := s.Sample(logits)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(c.allowed, got.Token) {
				t.Fatalf("temperature %v step %d: picked banned token %d", temp, step, got.Token)
			}
			if err := s.AcceptSampled(got.Token); err != nil {
				t.Fatal(err)
			}
		}
		if len(c.accepted) != 100 {
			t.Fatalf("the constraint saw %d tokens, want 100", len(c.accepted))
		}
	}
}

// TestConstraintErrors checks that a constraint failing, or leaving no
// token with a finite logit, is an error and not a pick.
func TestConstraintErrors(t *testing.T) {
	logits := make([]float32, 10)
	logits[4] = float32(negInf)
	for _, c := range []*setConstraint{
		{allowed: []int32{4}},
		{allowed: nil},
		{allowed: []int32{1}, fail: errors.New("broken")},
	} {
		s, err := NewSampler(SamplerParams{Constraint: c}, len(logits))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := s.Sample(logits); err == nil {
			t.Errorf("allowed %v (fail %v): picked %d, want an error", c.allowed, c.fail, got.Token)
		}
	}
}

// TestBanErrorsBlameRequest: when nothing is left to sample because the
// request's logit bias banned it, the error is the request's
// (ErrInvalidSampling); when the logits are not numbers, it is not.
func TestBanErrorsBlameRequest(t *testing.T) {
	const vocab = 10
	numbers := make([]float32, vocab)
	nans := make([]float32, vocab)
	for i := range nans {
		nans[i] = float32(math.NaN())
	}
	banAll := map[int32]float32{}
	for i := range int32(vocab) {
		banAll[i] = float32(math.Inf(-1))
	}
	tests := []struct {
		name    string
		p       SamplerParams
		logits  []float32
		request bool // ErrInvalidSampling wanted
	}{
		{"constraint's tokens banned", SamplerParams{Constraint: &setConstraint{allowed: []int32{2}}, LogitBias: map[int32]float32{2: float32(math.Inf(-1))}}, numbers, true},
		{"constraint's tokens banned, sampled", SamplerParams{Temperature: 1, Constraint: &setConstraint{allowed: []int32{2, 3}}, LogitBias: map[int32]float32{2: float32(math.Inf(-1)), 3: float32(math.Inf(-1))}}, numbers, true},
		{"every token banned", SamplerParams{LogitBias: banAll}, numbers, true},
		{"every token banned, sampled", SamplerParams{Temperature: 1, LogitBias: banAll}, numbers, true},
		{"NaN logits, a token biased", SamplerParams{LogitBias: map[int32]float32{1: 5}}, nans, false},
		{"NaN logits, constrained, another token banned", SamplerParams{Constraint: &setConstraint{allowed: []int32{2}}, LogitBias: map[int32]float32{3: float32(math.Inf(-1))}}, nans, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewSampler(tt.p, vocab)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Sample(tt.logits)
			if err == nil {
				t.Fatalf("picked %d, want an error", got.Token)
			}
			if errors.Is(err, ErrInvalidSampling) != tt.request {
				t.Errorf("error %q: the request's fault %v, want %v", err, !tt.request, tt.request)
			}
		})
	}
}

// decodeConstrained runs a decode loop over random logits: only the
// constraint can make the output valid. It returns the token ids up to
// (not including) the end token.
func decodeConstrained(t *testing.T, v *grammar.Vocab, g *grammar.Grammar, p SamplerParams, seed uint64, maxSteps int) []int32 {
	t.Helper()
	e, err := grammar.NewEngine(g, v)
	if err != nil {
		t.Fatal(err)
	}
	m, err := e.NewMatcher()
	if err != nil {
		t.Fatal(err)
	}
	p.Constraint = m
	s, err := NewSampler(p, v.Size())
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 99))
	logits := make([]float32, v.Size())
	var out []int32
	for range maxSteps {
		for i := range logits {
			logits[i] = float32(rng.NormFloat64())
		}
		got, err := s.Sample(logits)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.AcceptSampled(got.Token); err != nil {
			t.Fatal(err)
		}
		if m.Done() && !m.CanEnd() {
			return out // the end token was accepted
		}
		out = append(out, got.Token)
	}
	t.Fatalf("no end after %d steps", maxSteps)
	return nil
}

// personSchema is the schema of the integration tests, with checkPerson
// its validation.
const personSchema = `{"type":"object","properties":{
  "name":{"type":"string","minLength":1,"maxLength":12},
  "age":{"type":"integer"},
  "tags":{"type":"array","items":{"enum":["red","green","blue"]},"maxItems":3},
  "ok":{"type":"boolean"},
  "born":{"type":"string","format":"date"},
  "score":{"anyOf":[{"type":"number"},{"type":"null"}]}},
  "required":["name","age","tags","ok"],"additionalProperties":false}`

func checkPerson(text string) error {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &doc); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	for _, k := range []string{"name", "age", "tags", "ok"} {
		if _, ok := doc[k]; !ok {
			return fmt.Errorf("required %q missing", k)
		}
	}
	for k, raw := range doc {
		var err error
		switch k {
		case "name":
			var s string
			if err = json.Unmarshal(raw, &s); err == nil && (utf8.RuneCountInString(s) < 1 || utf8.RuneCountInString(s) > 12) {
				err = fmt.Errorf("length %d", utf8.RuneCountInString(s))
			}
		case "age":
			var n int64
			err = json.Unmarshal(raw, &n)
		case "tags":
			var tags []string
			if err = json.Unmarshal(raw, &tags); err == nil && len(tags) > 3 {
				err = fmt.Errorf("%d items", len(tags))
			}
			for _, tag := range tags {
				if tag != "red" && tag != "green" && tag != "blue" {
					err = fmt.Errorf("tag %q", tag)
				}
			}
		case "ok":
			var b bool
			err = json.Unmarshal(raw, &b)
		case "born":
			var s string
			if err = json.Unmarshal(raw, &s); err == nil && !regexp.MustCompile(`^\d{4}-\d\d-\d\d$`).MatchString(s) {
				err = fmt.Errorf("date %q", s)
			}
		case "score":
			var n *json.Number // valid JSON numbers may overflow a float64
			err = json.Unmarshal(raw, &n)
		default:
			err = fmt.Errorf("not in the schema")
		}
		if err != nil {
			return fmt.Errorf("property %q (%s): %v", k, raw, err)
		}
	}
	return nil
}

// TestConstrainedDecodeMatchesSchema decodes over random logits with the
// llama-bpe vocabulary, greedy and sampled, and checks that every output
// parses and validates against the schema.
func TestConstrainedDecodeMatchesSchema(t *testing.T) {
	tok, err := tokenizer.Load(shared.Path(t, "vocab/ggml-vocab-llama-bpe.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := grammar.VocabOf(tok)
	if err != nil {
		t.Fatal(err)
	}
	g, err := grammar.CompileSchema([]byte(personSchema), grammar.SchemaOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []SamplerParams{{}, {Temperature: 1, Seed: 3}, {Temperature: 0.7, TopK: 40, TopP: 0.9, Seed: 4}} {
		for seed := range uint64(4) {
			ids := decodeConstrained(t, v, g, p, seed, 3000)
			text := tok.Decode(ids)
			if err := checkPerson(text); err != nil {
				t.Errorf("temperature %v seed %d: %v\n%s", p.Temperature, seed, err, text)
			}
		}
	}
}

// TestMaskedGreedyMatchesChain checks that the greedy shortcut under a
// constraint picks what the full chain picks, NaN, infinities and ties
// included.
func TestMaskedGreedyMatchesChain(t *testing.T) {
	const vocab = 300
	inf := float32(math.Inf(1))
	nan := float32(math.NaN())
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 200 {
		c := &setConstraint{}
		for id := range int32(vocab) {
			if rng.IntN(3) == 0 {
				c.allowed = append(c.allowed, id)
			}
		}
		if len(c.allowed) == 0 {
			continue
		}
		logits := make([]float32, vocab)
		for i := range logits {
			switch rng.IntN(20) {
			case 0:
				logits[i] = nan
			case 1:
				logits[i] = inf
			case 2:
				logits[i] = math.MaxFloat32
			default:
				logits[i] = float32(rng.IntN(5)) // many ties
			}
		}
		s, err := NewSampler(SamplerParams{Constraint: c}, vocab)
		if err != nil {
			t.Fatal(err)
		}
		if !s.maskedGreedy() {
			t.Fatal("a plain greedy constrained sampler does not take the shortcut")
		}
		fast, err1 := s.argmaxAllowed(logits)
		slow, err2 := s.sampleChain(logits, 0)
		if (err1 == nil) != (err2 == nil) || fast != slow {
			t.Fatalf("trial %d: shortcut picked %d (%v), the chain %d (%v)", trial, fast, err1, slow, err2)
		}
	}
}

// TestConstrainedDecodeSmallVocab is TestConstrainedDecodeMatchesSchema on
// a vocabulary of single bytes and a few JSON pieces, so that it runs
// without the shared folder.
func TestConstrainedDecodeSmallVocab(t *testing.T) {
	var toks [][]byte
	for b := range 256 {
		toks = append(toks, []byte{byte(b)})
	}
	for _, s := range []string{`{"`, `": `, `", "`, `name`, `age`, `tags`, `"red"`, `true`, "\n  ", `2024-`, `é`} {
		toks = append(toks, []byte(s))
	}
	end := int32(len(toks))
	toks = append(toks, nil)
	v, err := grammar.NewVocab(len(toks), func(id int32) []byte { return toks[id] }, []int32{end})
	if err != nil {
		t.Fatal(err)
	}
	g, err := grammar.CompileSchema([]byte(personSchema), grammar.SchemaOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []SamplerParams{{}, {Temperature: 1, Seed: 9}} {
		for seed := range uint64(3) {
			var text []byte
			for _, id := range decodeConstrained(t, v, g, p, seed, 20000) {
				text = append(text, toks[id]...)
			}
			if err := checkPerson(string(text)); err != nil {
				t.Errorf("temperature %v seed %d: %v\n%s", p.Temperature, seed, err, text)
			}
		}
	}
}
