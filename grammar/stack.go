package grammar

import (
	"errors"
	"slices"
)

// A stack of the pushdown automaton is a chain of interned nodes: the top
// node's pos is the element to match next (always an elemChar), each
// parent's pos is where to resume when the rule above it ends. Interning
// makes equal stacks equal ids, so a set of stacks is a sorted []int32.
//
// Two ids are not real stacks: stackDone is the empty stack (the grammar
// has been matched) and stackRest stands for an unknown rest of a stack,
// used to compute what a grammar position accepts whatever lies below it.
const (
	stackDone int32 = 0
	stackRest int32 = 1
)

// snode is one interned node.
type snode struct {
	pos      int32   // element index into Grammar.elems
	parent   int32   // stack below; stackDone or stackRest at the bottom
	hash     uint64  // content hash of the whole stack, equal for equal stacks in any interner
	succ     []int32 // stacks after the top character matched; valid when expanded
	expanded bool
}

// Bounds of one interner and of one expansion.
const (
	maxNodes      = 1 << 21 // interned stack nodes
	maxStacks     = 1 << 12 // stacks in one state
	maxExpandWork = 1 << 16 // elements visited by one expansion
)

// errTooLarge is returned when a grammar's automaton outgrows its bounds.
var errTooLarge = errors.New("grammar: the automaton's state outgrew its bounds (the grammar is too ambiguous)")

// interner owns stack nodes for one grammar. It is not safe for
// concurrent use.
type interner struct {
	g     *Grammar
	nodes []snode            // [nodes] by id; ids 0 and 1 are stackDone and stackRest
	index map[[2]int32]int32 // (pos, parent) -> id
	work  int                // elements visited by the expansion in progress
	seen  map[[2]int32]bool  // (pos, parent) pairs the expansion in progress has visited
	dfa   dfa                // transitions between the states met so far
}

func newInterner(g *Grammar) *interner {
	return &interner{
		g:     g,
		nodes: []snode{{pos: -1, hash: 0x9e3779b97f4a7c15}, {pos: -1, hash: 0xc2b2ae3d27d4eb4f}},
		index: map[[2]int32]int32{},
		seen:  map[[2]int32]bool{},
	}
}

// mix is splitmix64's finalizer.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// node interns the stack (pos, parent).
func (in *interner) node(pos, parent int32) (int32, error) {
	k := [2]int32{pos, parent}
	if id, ok := in.index[k]; ok {
		return id, nil
	}
	if len(in.nodes) >= maxNodes {
		return 0, errTooLarge
	}
	id := int32(len(in.nodes))
	in.nodes = append(in.nodes, snode{pos: pos, parent: parent, hash: mix(uint64(uint32(pos))*0x100000001b3 ^ in.nodes[parent].hash)})
	in.index[k] = id
	return id, nil
}

// expand appends to out the stacks that resume at element pos with parent
// below: the tops that match a character next, stackDone when the grammar
// can end there, stackRest when an unknown rest is reached.
func (in *interner) expand(pos, parent int32, out []int32) ([]int32, error) {
	g := in.g
	for {
		if in.work++; in.work > maxExpandWork {
			return out, errTooLarge
		}
		// A pair visited before has added its stacks already: skipping it
		// keeps nullable rules from multiplying the paths.
		k := [2]int32{pos, parent}
		if in.seen[k] {
			return out, nil
		}
		in.seen[k] = true
		e := g.elems[pos]
		switch e.kind {
		case elemChar:
			id, err := in.node(pos, parent)
			return append(out, id), err
		case elemEnd:
			if parent == stackDone || parent == stackRest {
				return append(out, parent), nil
			}
			p := in.nodes[parent]
			pos, parent = p.pos, p.parent
		case elemRule:
			cont := parent
			if g.elems[pos+1].kind != elemEnd {
				// Not a tail call: remember where to resume.
				var err error
				if cont, err = in.node(pos+1, parent); err != nil {
					return out, err
				}
			}
			for _, a := range g.rules[e.arg].alts {
				var err error
				if out, err = in.expand(a, cont, out); err != nil {
					return out, err
				}
			}
			return out, nil
		}
	}
}

// successors returns the stacks after the top character of stack id
// matched, computed once per node.
func (in *interner) successors(id int32) ([]int32, error) {
	n := &in.nodes[id]
	if n.expanded {
		return n.succ, nil
	}
	in.work = 0
	clear(in.seen)
	succ, err := in.expand(n.pos+1, n.parent, nil)
	if err != nil {
		return nil, err
	}
	succ = canonical(succ)
	n = &in.nodes[id] // expand may have grown the slice
	n.succ, n.expanded = succ, true
	return succ, nil
}

// start returns the stacks of the grammar before any text, with rest
// below the start rule (stackDone for a whole grammar).
func (in *interner) start(rest int32) ([]int32, error) {
	in.work = 0
	clear(in.seen)
	var out []int32
	for _, a := range in.g.rules[in.g.root].alts {
		var err error
		if out, err = in.expand(a, rest, out); err != nil {
			return nil, err
		}
	}
	return canonical(out), nil
}

// canonical sorts and deduplicates a set of stacks in place.
func canonical(s []int32) []int32 {
	slices.Sort(s)
	return slices.Compact(s)
}

// setHash is the content hash of a set of stacks, the same in every
// interner.
func (in *interner) setHash(stacks []int32) uint64 {
	var h uint64
	for _, s := range stacks {
		h += mix(in.nodes[s].hash)
	}
	return h
}
