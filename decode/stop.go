package decode

import "strings"

// StopMatcher finds stop strings in streamed text. It holds back any tail
// of the text that could still grow into a stop string, so the text it
// releases never contains a stop string or a part of one that later
// completes.
type StopMatcher struct {
	stops []string // non-empty stop strings
	held  string   // text not yet released: a prefix of some stop string
}

// NewStopMatcher returns a matcher for the given stop strings; empty ones are ignored.
func NewStopMatcher(stops []string) *StopMatcher {
	m := &StopMatcher{}
	for _, s := range stops {
		if s != "" {
			m.stops = append(m.stops, s)
		}
	}
	return m
}

// Push adds a piece of generated text. It returns the text that is safe to
// release and whether a stop string was found; after a stop, the released
// text ends just before the stop string and the rest is dropped.
func (m *StopMatcher) Push(piece string) (release string, stopped bool) {
	if len(m.stops) == 0 {
		return piece, false
	}
	text := m.held + piece
	m.held = ""
	if at := m.firstStop(text); at >= 0 {
		return text[:at], true
	}
	keep := m.partialTail(text)
	m.held = text[len(text)-keep:]
	return text[:len(text)-keep], false
}

// Flush releases the text held back; call it when generation ends for a
// reason other than a stop string.
func (m *StopMatcher) Flush() string {
	s := m.held
	m.held = ""
	return s
}

// firstStop returns the byte offset of the earliest stop string in text, or -1.
func (m *StopMatcher) firstStop(text string) int {
	first := -1
	for _, s := range m.stops {
		if i := strings.Index(text, s); i >= 0 && (first < 0 || i < first) {
			first = i
		}
	}
	return first
}

// partialTail returns the length of the longest tail of text that is a
// proper prefix of some stop string.
func (m *StopMatcher) partialTail(text string) int {
	best := 0
	for _, s := range m.stops {
		n := min(len(s)-1, len(text))
		for ; n > best; n-- {
			if strings.HasSuffix(text, s[:n]) {
				best = n
				break
			}
		}
	}
	return best
}
