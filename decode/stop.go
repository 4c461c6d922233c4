package decode

// StopMatcher finds stop strings in streamed text. It holds back any tail
// of the text that could still grow into a stop string, so the text it
// releases never contains a stop string or a part of one that later
// completes.
//
// The stop strings are compiled into an Aho-Corasick automaton when the
// matcher is made, so Push costs time in proportion to the piece pushed,
// however many stop strings there are. Generation stops at the first
// point where the text contains a stop string; the released text ends
// before the longest stop string that ends there.
type StopMatcher struct {
	// The automaton: node 0 is the root (the empty string); node n stands
	// for the first depth[n] bytes of some stop string.
	next  map[uint64]int32 // node<<8 | byte -> child node
	fail  []int32          // [nodes] node of the longest proper suffix that is also a node
	depth []int32          // [nodes] length of the node's string
	match []int32          // [nodes] length of the longest stop string that is a suffix of the node's string; 0: none

	state int32  // node of the longest tail of the text so far that is a prefix of a stop string
	held  string // text not yet released: the last depth[state] bytes
}

// NewStopMatcher returns a matcher for the given stop strings; empty ones
// are ignored. It takes time and memory in proportion to their total
// length.
func NewStopMatcher(stops []string) *StopMatcher {
	m := &StopMatcher{next: map[uint64]int32{}, fail: []int32{0}, depth: []int32{0}, match: []int32{0}}
	parent := []int32{0}
	label := []byte{0}
	for _, s := range stops {
		node := int32(0)
		for i := 0; i < len(s); i++ {
			key := uint64(node)<<8 | uint64(s[i])
			child, ok := m.next[key]
			if !ok {
				child = int32(len(m.depth))
				m.next[key] = child
				m.depth = append(m.depth, m.depth[node]+1)
				m.fail = append(m.fail, 0)
				m.match = append(m.match, 0)
				parent = append(parent, node)
				label = append(label, s[i])
			}
			node = child
		}
		if len(s) > 0 {
			m.match[node] = int32(len(s))
		}
	}
	// Failure links in order of depth: a node's link is found through the
	// links of shorter nodes.
	order := nodesByDepth(m.depth)
	for _, n := range order {
		if m.depth[n] <= 1 {
			continue // the root and its children fail to the root
		}
		f := m.fail[parent[n]]
		for {
			if c, ok := m.next[uint64(f)<<8|uint64(label[n])]; ok {
				m.fail[n] = c
				break
			}
			if f == 0 {
				break
			}
			f = m.fail[f]
		}
		if m.match[n] == 0 {
			m.match[n] = m.match[m.fail[n]]
		}
	}
	return m
}

// nodesByDepth returns the node ids sorted by depth (a counting sort).
func nodesByDepth(depth []int32) []int32 {
	maxDepth := int32(0)
	for _, d := range depth {
		maxDepth = max(maxDepth, d)
	}
	start := make([]int, maxDepth+2)
	for _, d := range depth {
		start[d+1]++
	}
	for i := 1; i < len(start); i++ {
		start[i] += start[i-1]
	}
	order := make([]int32, len(depth))
	for n, d := range depth {
		order[start[d]] = int32(n)
		start[d]++
	}
	return order
}

// step moves the automaton from node n over byte b.
func (m *StopMatcher) step(n int32, b byte) int32 {
	for {
		if c, ok := m.next[uint64(n)<<8|uint64(b)]; ok {
			return c
		}
		if n == 0 {
			return 0
		}
		n = m.fail[n]
	}
}

// Push adds a piece of generated text. It returns the text that is safe to
// release and whether a stop string was found; after a stop, the released
// text ends just before the stop string and the rest is dropped.
func (m *StopMatcher) Push(piece string) (release string, stopped bool) {
	if len(m.depth) == 1 {
		return piece, false
	}
	text := m.held + piece
	m.held = ""
	state := m.state
	for i := len(text) - len(piece); i < len(text); i++ {
		state = m.step(state, text[i])
		if l := m.match[state]; l > 0 {
			m.state = 0
			return text[:i+1-int(l)], true
		}
	}
	m.state = state
	keep := int(m.depth[state])
	m.held = text[len(text)-keep:]
	return text[:len(text)-keep], false
}

// Flush releases the text held back; call it when generation ends for a
// reason other than a stop string.
func (m *StopMatcher) Flush() string {
	s := m.held
	m.held = ""
	m.state = 0
	return s
}
