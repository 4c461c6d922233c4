package grammar

import "encoding/binary"

// dfa caches the automaton's byte transitions between the states an
// interner has met, so that a trie walk through known states costs one
// table lookup per node. Ids are valid until reset.
type dfa struct {
	ids    map[string]int32 // state key -> id
	states []dstate         // [states] by id
	key    []byte           // scratch for keys
	buf    []int32          // scratch for steps
}

// dstate is one state of the dfa.
type dstate struct {
	st      state       // owns its stacks
	next    *[256]int32 // per byte: 0 not known yet, -1 dead, else the next state's id + 1
	hasRest bool        // st holds stackRest
	strip   int32       // id + 1 of st without stackRest; 0 not known yet, -1 when nothing is left
}

// Bounds of a dfa: past resetStates it is emptied before the next walk;
// a walk that needs more than maxStates fails.
const (
	dfaResetStates = 1 << 12
	dfaMaxStates   = 1 << 14
)

// reset empties the dfa when it has grown past dfaResetStates; no id may
// be held across a call.
func (d *dfa) reset() {
	if len(d.states) > dfaResetStates || d.ids == nil {
		d.ids = map[string]int32{}
		d.states = d.states[:0]
	}
}

// intern returns the id of st, which must have stacks.
func (d *dfa) intern(st state) (int32, error) {
	if d.ids == nil {
		d.ids = map[string]int32{}
	}
	k := d.key[:0]
	for _, s := range st.stacks {
		k = binary.LittleEndian.AppendUint32(k, uint32(s))
	}
	k = binary.LittleEndian.AppendUint32(k, uint32(st.cp))
	k = append(k, st.need, st.size)
	d.key = k
	if id, ok := d.ids[string(k)]; ok {
		return id, nil
	}
	if len(d.states) >= dfaMaxStates {
		return 0, errTooLarge
	}
	id := int32(len(d.states))
	st.stacks = append([]int32(nil), st.stacks...)
	ds := dstate{st: st, next: new([256]int32)}
	for _, s := range st.stacks {
		ds.hasRest = ds.hasRest || s == stackRest
	}
	d.states = append(d.states, ds)
	d.ids[string(k)] = id
	return id, nil
}

// trans returns the state after byte b from state id; ok is false when b
// cannot come next.
func (d *dfa) trans(in *interner, id int32, b byte) (next int32, ok bool, err error) {
	if t := d.states[id].next[b]; t != 0 {
		return t - 1, t > 0, nil
	}
	st, err := in.step(d.states[id].st, b, d.buf)
	if err != nil {
		return 0, false, err
	}
	d.buf = st.stacks[:0]
	if len(st.stacks) == 0 {
		d.states[id].next[b] = -1
		return 0, false, nil
	}
	if next, err = d.intern(st); err != nil {
		return 0, false, err
	}
	d.states[id].next[b] = next + 1
	return next, true, nil
}

// stripped returns the state id without stackRest; ok is false when
// nothing is left.
func (d *dfa) stripped(id int32) (next int32, ok bool, err error) {
	if t := d.states[id].strip; t != 0 {
		return t - 1, t > 0, nil
	}
	st := d.states[id].st
	var left []int32
	for _, s := range st.stacks {
		if s != stackRest {
			left = append(left, s)
		}
	}
	if len(left) == 0 {
		d.states[id].strip = -1
		return 0, false, nil
	}
	st.stacks = left
	if next, err = d.intern(st); err != nil {
		return 0, false, err
	}
	d.states[id].strip = next + 1
	return next, true, nil
}
