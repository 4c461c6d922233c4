package grammar

import (
	"fmt"
	"maps"
	"slices"
)

// Matcher follows one sequence through a grammar. It is not safe for
// concurrent use; it satisfies the sampler's constraint interface.
type Matcher struct {
	e    *Engine
	in   *interner // this sequence's stacks
	st   state     // where the text so far has left the automaton
	done bool      // an end token has been accepted
	w    walker    // scratch of mask walks
}

// NewMatcher starts a sequence at the beginning of the grammar.
func (e *Engine) NewMatcher() (*Matcher, error) {
	m := &Matcher{e: e, in: newInterner(e.g)}
	stacks, err := m.in.start(stackDone)
	if err != nil {
		return nil, err
	}
	m.st = state{stacks: stacks}
	return m, nil
}

// Clone returns an independent copy of m at the same place.
func (m *Matcher) Clone() *Matcher {
	c := *m
	// Successor lists are never changed once set, so the copy may share them.
	c.in = &interner{g: m.in.g, nodes: slices.Clone(m.in.nodes), index: maps.Clone(m.in.index), seen: map[[2]int32]bool{}}
	c.st.stacks = slices.Clone(m.st.stacks)
	c.w = walker{}
	return &c
}

// Done reports whether the sequence is complete: an end token was
// accepted, or the text so far completes the grammar and nothing may
// follow it (only an end token is allowed next).
func (m *Matcher) Done() bool {
	return m.done || (m.st.accepting() && len(m.st.stacks) == 1)
}

// CanEnd reports whether the text so far is a complete match.
func (m *Matcher) CanEnd() bool { return !m.done && m.st.accepting() }

// Accept advances by token tok. An end token is accepted only where the
// grammar may end; a token whose bytes cannot come next is an error and
// leaves the matcher as it was.
func (m *Matcher) Accept(tok int32) error {
	v := m.e.v
	switch {
	case m.done:
		return fmt.Errorf("grammar: token %d after the end", tok)
	case tok < 0 || int(tok) >= v.n:
		return fmt.Errorf("grammar: token %d outside a vocabulary of %d", tok, v.n)
	case v.isEnd(tok):
		if !m.st.accepting() {
			return fmt.Errorf("grammar: end token %d before the grammar is complete", tok)
		}
		m.done = true
		return nil
	case v.bytes[tok] == nil:
		return fmt.Errorf("grammar: token %d is not text", tok)
	}
	if err := m.AcceptBytes(v.bytes[tok]); err != nil {
		return fmt.Errorf("grammar: token %d: %w", tok, err)
	}
	return nil
}

// AcceptBytes advances by text b, or returns an error and leaves the
// matcher as it was when b cannot come next.
func (m *Matcher) AcceptBytes(b []byte) error {
	if m.done {
		return fmt.Errorf("grammar: text after the end")
	}
	st := m.st
	for i, c := range b {
		next, err := m.in.step(st, c, nil)
		if err != nil {
			return err
		}
		if len(next.stacks) == 0 {
			return fmt.Errorf("grammar: %q does not continue the grammar (at byte %d)", b, i)
		}
		st = next
	}
	m.st = st
	if len(m.in.nodes) > compactNodes {
		m.compact()
	}
	return nil
}

// compactNodes is how many interned nodes a matcher keeps before it
// drops those its state no longer uses.
const compactNodes = 1 << 16

// compact moves the live stacks into a fresh interner, dropping the nodes
// that earlier steps and walks left behind.
func (m *Matcher) compact() {
	in := newInterner(m.in.g)
	ids := map[int32]int32{stackDone: stackDone, stackRest: stackRest}
	var move func(id int32) int32
	move = func(id int32) int32 {
		if n, ok := ids[id]; ok {
			return n
		}
		old := m.in.nodes[id]
		n, _ := in.node(old.pos, move(old.parent)) // fewer nodes than before: cannot fail
		ids[id] = n
		return n
	}
	for i, s := range m.st.stacks {
		m.st.stacks[i] = move(s)
	}
	m.st.stacks = canonical(m.st.stacks)
	m.in = in
}

// Allowed sets mask (at least MaskWords words; bit i of word i/64 for token
// i) to the tokens that may come next, end tokens included where the
// grammar may end. Words past the vocabulary are cleared.
func (m *Matcher) Allowed(mask []uint64) error {
	v := m.e.v
	if len(mask) < v.words {
		return fmt.Errorf("grammar: mask of %d words for a vocabulary of %d tokens", len(mask), v.n)
	}
	clear(mask[v.words:])
	if m.done {
		clear(mask)
		return fmt.Errorf("grammar: no token may follow the end")
	}
	h := m.in.hashState(m.st)
	got := m.e.cached(h)
	if got == nil {
		var err error
		if got, err = m.compute(); err != nil {
			return err
		}
		m.e.store(h, got)
	}
	copy(mask, got)
	if !slices.ContainsFunc(got, func(w uint64) bool { return w != 0 }) {
		return fmt.Errorf("grammar: no token of the vocabulary can continue the grammar here")
	}
	return nil
}

// compute builds the mask of the current state.
func (m *Matcher) compute() ([]uint64, error) {
	v := m.e.v
	mask := make([]uint64, v.words)
	m.w.work = 0
	if m.st.accepting() {
		for _, id := range v.end {
			mask[id>>6] |= 1 << (id & 63)
		}
	}
	if m.st.need > 0 {
		// Inside a character: rare, so walk the whole trie.
		return mask, m.w.walk(m.in, v, 0, m.st, mask, nil)
	}
	for _, s := range m.st.stacks {
		if s == stackDone {
			continue
		}
		t, err := m.e.tableFor(m.in, s)
		if err != nil {
			return nil, err
		}
		for i, w := range t.accepted {
			mask[i] |= w
		}
		for _, r := range t.rest {
			st, err := m.in.feed(state{stacks: []int32{s}}, r.prefix)
			if err != nil {
				return nil, err
			}
			if len(st.stacks) == 0 {
				continue
			}
			v.setToks(mask, r.node)
			if err := m.w.walk(m.in, v, r.node, st, mask, nil); err != nil {
				return nil, err
			}
		}
	}
	return mask, nil
}
