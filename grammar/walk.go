package grammar

import (
	"errors"
	"slices"
)

// maxWalkWork bounds the stack steps of one mask computation.
const maxWalkWork = 1 << 25

// errWalkTooLong is returned when computing one mask would take too long.
var errWalkTooLong = errors.New("grammar: computing a token mask took more work than allowed (the grammar is too ambiguous)")

// walker holds the scratch of trie walks.
type walker struct {
	bufs [][]int32 // [depth] stacks of the state at each depth of the walk
	path []byte    // [depth] bytes from the walk's start to the current node
	work int       // stack steps of the mask in progress

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
// automaton in st, and sets in mask every token of the subtree (from's own
// excluded) that st can take. When rest is not nil the walk is for a
// position table: stacks that reach stackRest add their node to *rest and
// the walk goes on without them.
func (w *walker) walk(in *interner, v *Vocab, from int32, st state, mask []uint64, rest *[]restRoot) error {
	base := v.nodeDepth[from]
	depth := func(i int32) int { return int(v.nodeDepth[i] - base) }
	states := []state{st}
	restEnd := int32(-1) // end of the subtree of the last rest root
	for i := from + 1; i < v.nodeEnd[from]; {
		d := depth(i)
		for len(w.bufs) <= d {
			w.bufs = append(w.bufs, nil)
			w.path = append(w.path, 0)
		}
		states = states[:d]
		parent := states[d-1]
		w.work += len(parent.stacks)
		if w.work > maxWalkWork {
			return errWalkTooLong
		}
		next, err := in.step(parent, v.nodeByte[i], w.bufs[d])
		if err != nil {
			return err
		}
		w.bufs[d] = next.stacks[:0]
		w.path[d] = v.nodeByte[i]
		if r := slices.Index(next.stacks, stackRest); rest != nil && r >= 0 && r <= 1 {
			if i >= restEnd {
				prefix := append(append([]byte(nil), v.bytesOfNode(from)...), w.path[1:d+1]...)
				*rest = append(*rest, restRoot{node: i, prefix: prefix})
				restEnd = v.nodeEnd[i]
				if w.restTokens += v.subtreeTokens(i); w.restLimit > 0 && w.restTokens > w.restLimit {
					return errDeepen
				}
			}
			next.stacks = slices.Delete(next.stacks, r, r+1)
		}
		if len(next.stacks) == 0 {
			i = v.nodeEnd[i]
			continue
		}
		v.setToks(mask, i)
		states = append(states, next)
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
