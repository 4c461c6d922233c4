package decode

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"llmserve/grammar"
	"llmserve/internal/shared"
	"llmserve/model/tokenizer"
)

// maskPicker is a MaskPicker over a host engine that does on the host what
// a device must: it bans the tokens a pick's mask does not allow and picks
// as without a constraint (devicePickRef), gives -1 where nothing allowed
// is left, and leaves every third picked row to the caller, as a device
// does with a pick it cannot apply. With masks false it reports that it
// applies none, and a masked pick reaching it is an error.
type maskPicker struct {
	Engine
	masks bool

	mu     sync.Mutex // guards the counts below
	t      *testing.T
	rows   int // picks seen
	masked int // masked picks it picked itself
	none   int // masked picks that allowed no token with a finite logit
	bad    int // masked picks received with masks false
}

func (m *maskPicker) PicksMasks() bool { return m.masks }

func (m *maskPicker) ForwardPick(b *Batch, picks []*Pick, toks []int32, logits []float32) error {
	if err := m.Forward(b, logits); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	V := m.VocabSize()
	for r, p := range picks {
		toks[r] = -1
		if p == nil {
			continue
		}
		m.rows++
		if p.Mask != nil && !m.masks {
			m.bad++
			continue
		}
		if m.rows%3 == 0 {
			continue
		}
		toks[r] = devicePickRef(m.t, p, logits[r*V:(r+1)*V])
		switch {
		case p.Mask != nil && toks[r] < 0:
			m.none++
		case p.Mask != nil:
			m.masked++
		}
	}
	return nil
}

// llamaBPE loads the llama-bpe vocabulary and its grammar vocabulary.
func llamaBPE(t *testing.T) (*tokenizer.Tokenizer, *grammar.Vocab) {
	t.Helper()
	tok, err := tokenizer.Load(shared.Path(t, "vocab/ggml-vocab-llama-bpe.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := grammar.VocabOf(tok)
	if err != nil {
		t.Fatal(err)
	}
	return tok, v
}

// TestSchedulerMaskedPicks runs JSON-schema constrained requests (greedy
// and sampled) beside unconstrained and host-only ones over random logits
// on the 128256-token llama-bpe vocabulary, through an engine that applies
// masks, one that picks but applies none, and the plain engine: every
// request gives the same tokens on all three, the constrained outputs
// that end validate against the schema, and the masked rows were picked
// by the engine (bar those it left to the host).
func TestSchedulerMaskedPicks(t *testing.T) {
	tok, v := llamaBPE(t)
	g, err := grammar.CompileSchema([]byte(personSchema), grammar.SchemaOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	ge, err := grammar.NewEngine(g, v)
	if err != nil {
		t.Fatal(err)
	}
	type req struct {
		p           SamplerParams
		constrained bool
	}
	reqs := []req{
		{SamplerParams{}, true},
		{SamplerParams{Temperature: 1, Seed: 3}, true},
		{SamplerParams{Temperature: 0.7, TopK: 40, TopP: 0.9, MinP: 0.05, Seed: 4}, true},
		{SamplerParams{Temperature: 0.9, Seed: 5}, false},
		{SamplerParams{Temperature: 0.9, LogitBias: map[int32]float32{90: 2}, Seed: 6}, true}, // host only
	}
	run := func(eng Engine) []result {
		s := startSchedulerVocab(t, eng, tokVocab{tok}, SchedulerConfig{MaxQueue: 8, StepTokens: 32})
		out := make([]result, len(reqs))
		var wg sync.WaitGroup
		for i, r := range reqs {
			p := r.p
			if r.constrained {
				m, err := ge.NewMatcher()
				if err != nil {
					t.Fatal(err)
				}
				p.Constraint = m
			}
			st, err := s.Submit(context.Background(), Request{Prompt: prompt(5, int32(i)), MaxTokens: 120, Sampling: p})
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() { out[i] = collect(t, st) })
		}
		wg.Wait()
		return out
	}
	const vocab, ctx, slots = 128256, 256, 4
	if v.Size() != vocab {
		t.Fatalf("llama-bpe vocabulary of %d tokens, want %d", v.Size(), vocab)
	}
	want := run(newFakeEngine(vocab, ctx, slots))
	on := &maskPicker{Engine: newFakeEngine(vocab, ctx, slots), masks: true, t: t}
	off := &maskPicker{Engine: newFakeEngine(vocab, ctx, slots), t: t}
	for _, eng := range []*maskPicker{on, off} {
		got := run(eng)
		for i := range got {
			if !slices.Equal(got[i].tokens, want[i].tokens) || got[i].final.FinishReason != want[i].final.FinishReason {
				t.Errorf("masks %v, request %d: %q (%s), on the host %q (%s), first difference at %s", eng.masks, i,
					got[i].text, got[i].final.FinishReason, want[i].text, want[i].final.FinishReason, firstDiff(got[i].tokens, want[i].tokens))
			}
		}
	}
	valid := 0
	for i, r := range want {
		if r.final.Err != nil {
			t.Errorf("request %d: %v", i, r.final.Err)
		}
		if reqs[i].constrained && r.final.FinishReason == "stop" {
			if err := checkPerson(strings.TrimSpace(r.text)); err != nil {
				t.Errorf("request %d: %v\n%s", i, err, r.text)
			}
			valid++
		}
	}
	if valid == 0 {
		t.Error("no constrained request ended its document")
	}
	if on.masked == 0 || on.bad != 0 {
		t.Errorf("engine with masks: %d masked rows picked, %d refused, want some and none", on.masked, on.bad)
	}
	if off.masked != 0 || off.bad != 0 {
		t.Errorf("engine without masks: %d masked rows picked, %d received, want none", off.masked, off.bad)
	}
	for i, r := range want {
		t.Logf("request %d: %d tokens, %s", i, len(r.tokens), r.final.FinishReason)
	}
	t.Logf("masked rows picked by the engine: %d of %d offered", on.masked, on.rows)
}

// TestSchedulerMaskedNothingAllowed checks the fallback where the engine
// finds no allowed token: the host picks the row with the same draw and
// ends the request with the constraint's error, as without the engine.
func TestSchedulerMaskedNothingAllowed(t *testing.T) {
	for _, temp := range []float32{0, 1} {
		eng := &maskPicker{Engine: newFakeEngine(64, 64, 2), masks: true, t: t}
		s := startScheduler(t, eng, SchedulerConfig{MaxQueue: 4})
		r := run(t, s, Request{Prompt: prompt(3, 1), MaxTokens: 5, Sampling: SamplerParams{Temperature: temp, Seed: 1, Constraint: &setConstraint{}}})
		if r.final.Err == nil || !strings.Contains(r.final.Err.Error(), "constraint") || len(r.tokens) != 0 {
			t.Errorf("temperature %v: %d tokens, error %v, want no token and the constraint's error", temp, len(r.tokens), r.final.Err)
		}
		if eng.none != 1 || eng.masked != 0 {
			t.Errorf("temperature %v: the engine found nothing allowed %d times and picked %d masked rows, want 1 and 0", temp, eng.none, eng.masked)
		}
	}
}
