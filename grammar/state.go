package grammar

import "unicode/utf8"

// state is where the automaton is: its set of stacks and, between the
// bytes of one UTF-8 character, the bits read so far.
type state struct {
	stacks []int32 // sorted interned stack ids
	cp     rune    // bits of a partial character
	need   uint8   // continuation bytes still expected; 0: at a character boundary
	size   uint8   // length in bytes of the partial character's encoding
}

// minRune is the smallest code point of each encoded length: anything
// below is an overlong encoding, which is not UTF-8.
var minRune = [5]rune{0, 0, 0x80, 0x800, 0x10000}

// maxStepStacks bounds the stacks one step gathers before duplicates are
// removed.
const maxStepStacks = 1 << 16

// hashState keys the mask cache: equal states hash equal in any interner.
func (in *interner) hashState(st state) uint64 {
	return mix(in.setHash(st.stacks) ^ uint64(st.cp)<<16 ^ uint64(st.need)<<8 ^ uint64(st.size))
}

// accepting reports whether the grammar may end in st.
func (st state) accepting() bool {
	return st.need == 0 && len(st.stacks) > 0 && st.stacks[0] == stackDone
}

// step advances st by byte b, writing the new stacks into out[:0]. The
// result has no stacks when b cannot come next.
func (in *interner) step(st state, b byte, out []int32) (state, error) {
	out = out[:0]
	cp, need, size := st.cp, st.need, st.size
	full := false
	switch {
	case need == 0 && b < 0x80:
		cp, full = rune(b), true
	case need == 0 && b&0xe0 == 0xc0:
		cp, need, size = rune(b&0x1f), 1, 2
	case need == 0 && b&0xf0 == 0xe0:
		cp, need, size = rune(b&0x0f), 2, 3
	case need == 0 && b&0xf8 == 0xf0:
		cp, need, size = rune(b&0x07), 3, 4
	case need > 0 && b&0xc0 == 0x80:
		cp, need = cp<<6|rune(b&0x3f), need-1
		full = need == 0
	default:
		return state{stacks: out}, nil // not UTF-8
	}
	// The code points the encoding so far can still become.
	lo := max(cp<<(6*need), minRune[size])
	hi := min(cp<<(6*need)|(1<<(6*need)-1), utf8.MaxRune)
	if lo > hi || (lo >= 0xd800 && hi <= 0xdfff) {
		return state{stacks: out}, nil // overlong, a surrogate or beyond Unicode
	}
	g := in.g
	if !full {
		for _, s := range st.stacks {
			if s > stackRest && g.matchRange(g.elems[in.nodes[s].pos].arg, lo, hi) {
				out = append(out, s)
			}
		}
		return state{stacks: out, cp: cp, need: need, size: size}, nil
	}
	for _, s := range st.stacks {
		if s <= stackRest || !g.match(g.elems[in.nodes[s].pos].arg, cp) {
			continue
		}
		succ, err := in.successors(s)
		if err != nil {
			return state{}, err
		}
		if out = append(out, succ...); len(out) > maxStepStacks {
			return state{}, errTooLarge
		}
	}
	if len(st.stacks) > 1 {
		out = canonical(out)
	}
	if len(out) > maxStacks {
		return state{}, errTooLarge
	}
	return state{stacks: out}, nil
}

// feed advances st by every byte of b; the result has no stacks when b
// cannot come next.
func (in *interner) feed(st state, b []byte) (state, error) {
	for _, c := range b {
		var err error
		if st, err = in.step(st, c, nil); err != nil || len(st.stacks) == 0 {
			return st, err
		}
	}
	return st, nil
}
