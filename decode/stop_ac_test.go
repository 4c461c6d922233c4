package decode

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// stopReference is the matcher's rule by its definition: the text stops at
// the first end of any stop string, before the longest one ending there.
func stopReference(text string, stops []string) (string, bool) {
	for end := 1; end <= len(text); end++ {
		best := 0
		for _, s := range stops {
			if s != "" && strings.HasSuffix(text[:end], s) {
				best = max(best, len(s))
			}
		}
		if best > 0 {
			return text[:end-best], true
		}
	}
	return text, false
}

// TestStopMatcherMatchesReference streams random texts in random pieces
// against random sets of stop strings over a small alphabet, where stops
// overlap and share prefixes and suffixes.
func TestStopMatcherMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = "abc"[rng.IntN(3)]
		}
		return string(b)
	}
	for trial := range 3000 {
		stops := make([]string, rng.IntN(6))
		for i := range stops {
			stops[i] = word(rng.IntN(5))
		}
		text := word(rng.IntN(30))
		want, wantStop := stopReference(text, stops)
		m := NewStopMatcher(stops)
		var got strings.Builder
		stopped := false
		for rest := text; rest != "" && !stopped; {
			n := 1 + rng.IntN(min(4, len(rest)))
			r, s := m.Push(rest[:n])
			got.WriteString(r)
			rest, stopped = rest[n:], s
		}
		if !stopped {
			got.WriteString(m.Flush())
		}
		if got.String() != want || stopped != wantStop {
			t.Fatalf("trial %d: stops %q text %q: released %q stopped=%v, want %q stopped=%v",
				trial, stops, text, got.String(), stopped, want, wantStop)
		}
	}
}

// BenchmarkStopMatcherMany pushes one-byte pieces through a matcher of
// 300k stop strings, and builds one.
func BenchmarkStopMatcherMany(b *testing.B) {
	stops := make([]string, 300_000)
	for i := range stops {
		stops[i] = fmt.Sprintf("stop-%06d", i)
	}
	b.Run("build", func(b *testing.B) {
		for b.Loop() {
			NewStopMatcher(stops)
		}
	})
	b.Run("push", func(b *testing.B) {
		m := NewStopMatcher(stops)
		text := "a story of stop-12 and stops that never quite stop-"
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			m.Push(text[i : i+1])
			i = (i + 1) % len(text)
		}
	})
}
