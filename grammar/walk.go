package grammar

import "errors"

// maxWalkWork bounds the trie nodes one mask computation visits.
const maxWalkWork = 1 << 24

// errWalkTooLong is returned when computing one mask would take too long.
var errWalkTooLong = errors.New("grammar: computing a token mask took more work than allowed (the grammar is too ambiguous)")

// walker holds the scratch of trie walks.
type walker struct {
	ids  []int32 // [depth] dfa state of each node on the walk's path
	path []byte  // [depth] bytes from the walk's start to the current node
	work int     // trie nodes visited by the mask in progress

	restTokens int // tokens below the rest roots found so far
	restLimit  int // stop with errDeepen past this many; 0: no limit
}

// errDeepen stops a table walk that leaves too much to the rest of the stack.
var errDeepen = errors.New("grammar: table needs a deeper key")

// restRoot is a trie node where the rest of the stack below a position
// decides which tokens of its subtree are allowed.
type restRoot struct {
	node   int32
	prefix []byte // the node's bytes
}

// setToks sets the mask bits of the tokens that are exactly node i's prefix.
func (v *Vocab) setToks(mask []uint64, i int32) {
	lo := v.nodeTok[i]
	for _, id := range v.toks[lo : lo+v.nodeOwn[i]] {
		mask[id>>6] |= 1 << (id & 63)
	}
}

// walk visits the subtree of trie node from, whose prefix leaves the
// automaton in st (which has stacks), and sets in mask every token of the
// subtree (from's own excluded) that st can take. When rest is not nil
// the walk is for a position table: stacks that reach stackRest add their
// node to *rest and the walk goes on without them.
func (w *walker) walk(in *interner, v *Vocab, from int32, st state, mask []uint64, rest *[]restRoot) error {
	d := &in.dfa
	d.reset()
	start, err := d.intern(st)
	if err != nil {
		return err
	}
	base := v.nodeDepth[from]
	ids := append(w.ids[:0], start) // [depth] state of each node on the path
	defer func() { w.ids = ids[:0] }()
	restEnd := int32(-1) // end of the subtree of the last rest root
	for i := from + 1; i < v.nodeEnd[from]; {
		depth := int(v.nodeDepth[i] - base)
		for len(w.path) <= depth {
			w.path = append(w.path, 0)
		}
		ids = ids[:depth]
		if w.work++; w.work > maxWalkWork {
			return errWalkTooLong
		}
		next, ok, err := d.trans(in, ids[depth-1], v.nodeByte[i])
		if err != nil {
			return err
		}
		if !ok {
			i = v.nodeEnd[i]
			continue
		}
		w.path[depth] = v.nodeByte[i]
		if rest != nil && d.states[next].hasRest {
			if i >= restEnd {
				prefix := append(append([]byte(nil), v.bytesOfNode(from)...), w.path[1:depth+1]...)
				*rest = append(*rest, restRoot{node: i, prefix: prefix})
				restEnd = v.nodeEnd[i]
				if w.restTokens += v.subtreeTokens(i); w.restLimit > 0 && w.restTokens > w.restLimit {
					return errDeepen
				}
			}
			if next, ok, err = d.stripped(next); err != nil {
				return err
			}
			if !ok {
				i = v.nodeEnd[i]
				continue
			}
		}
		v.setToks(mask, i)
		ids = append(ids, next)
		i++
	}
	return nil
}

// bytesOfNode returns the prefix of trie node i: the bytes of a token of
// its subtree, cut to its depth.
func (v *Vocab) bytesOfNode(i int32) []byte {
	if v.nodeDepth[i] == 0 {
		return nil
	}
	return v.bytes[v.toks[v.nodeTok[i]]][:v.nodeDepth[i]]
}

// subtreeTokens counts the tokens of trie node i's subtree.
func (v *Vocab) subtreeTokens(i int32) int {
	end := int32(len(v.toks))
	if e := v.nodeEnd[i]; int(e) < len(v.nodeTok) {
		end = v.nodeTok[e]
	}
	return int(end - v.nodeTok[i])
}
