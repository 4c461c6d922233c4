package httpapi

import (
	"container/list"
	"context"
	"fmt"
	"sync"

	"llmserve/decode"
	"llmserve/grammar"
)

// maxCachedGrammars bounds the compiled grammars kept per model.
const maxCachedGrammars = 64

// grammarCache keeps the engines of the grammars requests sent, keyed by
// their text, so that a repeated grammar costs neither compiling nor its
// masks again: an engine keeps the masks it computed. It holds the loaded
// model's vocabulary and starts over when the model changes. The zero
// value is ready.
type grammarCache struct {
	mu    sync.Mutex               // guards the fields below
	model *Model                   // the model vocab and entries were built for
	vocab *grammar.Vocab           // the model's tokens as the matchers see them
	order *list.List               // of *grammarEntry, most recently used first
	byKey map[string]*list.Element // grammar text -> its element of order
}

// grammarEntry is one compiled grammar, or why it does not compile.
type grammarEntry struct {
	key string
	eng *grammar.Engine
	err error
}

// engine returns the engine of c for m's vocabulary, compiling it on
// first use. A grammar that does not compile is remembered too.
func (gc *grammarCache) engine(m *Model, c *constraint) (*grammar.Engine, error) {
	gc.mu.Lock()
	if gc.model != m {
		gc.model, gc.vocab = m, nil
		gc.order, gc.byKey = list.New(), map[string]*list.Element{}
	}
	if el, ok := gc.byKey[c.gbnf]; ok {
		gc.order.MoveToFront(el)
		e := el.Value.(*grammarEntry)
		gc.mu.Unlock()
		if e.err != nil {
			return nil, compileError(c, e.err)
		}
		return e.eng, nil
	}
	if gc.vocab == nil {
		v, err := vocabOf(m.Tokenizer)
		if err != nil {
			gc.mu.Unlock()
			return nil, err
		}
		gc.vocab = v
	}
	v := gc.vocab
	gc.mu.Unlock()

	e := &grammarEntry{key: c.gbnf}
	g, err := grammar.Parse(c.gbnf)
	if err == nil {
		e.eng, err = grammar.NewEngine(g, v)
	}
	if err == nil {
		err = writable(e.eng, v)
	}
	e.err = err

	gc.mu.Lock()
	if gc.model == m {
		if _, ok := gc.byKey[c.gbnf]; !ok {
			gc.byKey[c.gbnf] = gc.order.PushFront(e)
			for gc.order.Len() > maxCachedGrammars {
				last := gc.order.Back()
				delete(gc.byKey, last.Value.(*grammarEntry).key)
				gc.order.Remove(last)
			}
		}
	}
	gc.mu.Unlock()
	if err != nil {
		return nil, compileError(c, err)
	}
	return e.eng, nil
}

// len is the number of grammars kept.
func (gc *grammarCache) len() int {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	if gc.order == nil {
		return 0
	}
	return gc.order.Len()
}

// endTokens is a tokenizer that names its end-of-generation tokens.
type endTokens interface{ IsEOG(id int32) bool }

// vocabOf builds the matchers' view of a tokenizer: control tokens stand
// for no text, and the end-of-generation tokens (EOS alone when the
// tokenizer cannot list them) end the grammar.
func vocabOf(tok Tokenizer) (*grammar.Vocab, error) {
	n := tok.VocabSize()
	ctl, _ := tok.(controlTokens)
	eog, _ := tok.(endTokens)
	var end []int32
	for id := range int32(n) {
		if eog != nil && eog.IsEOG(id) || eog == nil && id == tok.EOS() {
			end = append(end, id)
		}
	}
	v, err := grammar.NewVocab(n, func(id int32) []byte {
		if ctl != nil && ctl.IsControl(id) {
			return nil
		}
		return tok.TokenBytes(id)
	}, end)
	if err != nil {
		return nil, fmt.Errorf("grammar vocabulary: %w", err)
	}
	return v, nil
}

// matchers makes a fresh matcher of eng for each of n choices; nil when
// eng is nil.
func matchers(eng *grammar.Engine, n int) ([]decode.Constraint, error) {
	if eng == nil {
		return nil, nil
	}
	out := make([]decode.Constraint, n)
	for i := range out {
		m, err := eng.NewMatcher()
		if err != nil {
			return nil, fmt.Errorf("grammar: %w", err)
		}
		out[i] = m
	}
	return out, nil
}

// submitChoices queues n choices of req. Without a grammar they go
// together (sharing the prompt's processing); with one each choice is
// queued alone with its own matcher, and the seed it would have had
// among the n.
func submitChoices(ctx context.Context, sched *decode.Scheduler, req decode.Request, n int, eng *grammar.Engine) ([]*decode.Stream, error) {
	if eng == nil {
		return sched.SubmitChoices(ctx, req, n)
	}
	ms, err := matchers(eng, n)
	if err != nil {
		return nil, err
	}
	streams := make([]*decode.Stream, 0, n)
	seed := req.Sampling.Seed
	for j, m := range ms {
		one := req
		one.Sampling.Seed = seed + uint64(j)
		one.Sampling.Constraint = m
		got, err := sched.SubmitChoices(ctx, one, 1)
		if err != nil {
			return nil, err // the caller's cancel ends the choices queued so far
		}
		streams = append(streams, got...)
	}
	return streams, nil
}

// writable checks that the vocabulary can start the grammar's text: a
// grammar that no token begins would fail at the first token instead.
func writable(eng *grammar.Engine, v *grammar.Vocab) error {
	m, err := eng.NewMatcher()
	if err != nil {
		return err
	}
	if err := m.Allowed(make([]uint64, v.MaskWords())); err != nil {
		return fmt.Errorf("this model's vocabulary cannot write it: %w", err)
	}
	return nil
}
