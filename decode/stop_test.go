package decode

import (
	"strings"
	"testing"
)

func TestStopMatcher(t *testing.T) {
	tests := []struct {
		name    string
		stops   []string
		pieces  []string
		want    string // everything released, including the final flush when not stopped
		stopped bool
	}{
		{"no stops", nil, []string{"a", "b"}, "ab", false},
		{"whole piece", []string{"END"}, []string{"ab", "END", "cd"}, "ab", true},
		{"split over pieces", []string{"END"}, []string{"abE", "N", "Dxx"}, "ab", true},
		{"false start released", []string{"END"}, []string{"abE", "Nx", "y"}, "abENxy", false},
		{"inside a piece", []string{"\n\n"}, []string{"one\n", "\ntwo"}, "one", true},
		{"earliest of several", []string{"zz", "b"}, []string{"azzb"}, "a", true},
		{"prefix held at end flushed", []string{"STOP"}, []string{"xx", "ST"}, "xxST", false},
		{"multibyte stop", []string{"é!"}, []string{"caf", "é", "!"}, "caf", true},
		{"empty stop ignored", []string{""}, []string{"a"}, "a", false},
		{"overlapping prefixes", []string{"aab"}, []string{"a", "a", "a", "b"}, "a", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewStopMatcher(tt.stops)
			var got strings.Builder
			stopped := false
			for _, p := range tt.pieces {
				r, s := m.Push(p)
				got.WriteString(r)
				for _, st := range tt.stops {
					if st != "" && strings.Contains(got.String(), st) {
						t.Fatalf("released text %q contains stop %q", got.String(), st)
					}
				}
				if s {
					stopped = true
					break
				}
			}
			if !stopped {
				got.WriteString(m.Flush())
			}
			if got.String() != tt.want || stopped != tt.stopped {
				t.Errorf("released %q stopped=%v, want %q stopped=%v", got.String(), stopped, tt.want, tt.stopped)
			}
		})
	}
}

func TestStopMatcherHoldsOnlyPossiblePrefixes(t *testing.T) {
	m := NewStopMatcher([]string{"<|end|>"})
	r, _ := m.Push("hello <|e")
	if r != "hello " {
		t.Errorf("released %q, want %q", r, "hello ")
	}
	r, _ = m.Push("nd")
	if r != "" {
		t.Errorf("released %q while still a prefix", r)
	}
	r, _ = m.Push("x")
	if r != "<|endx" {
		t.Errorf("released %q, want %q", r, "<|endx")
	}
}
