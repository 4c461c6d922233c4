package main

import (
	"testing"
	"time"
)

// TestDurationFlag checks the duration flags' parser: seconds or a Go
// duration, never negative, and nothing else.
func TestDurationFlag(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"90", 90 * time.Second, true},
		{"1.5", 1500 * time.Millisecond, true},
		{"1m30s", 90 * time.Second, true},
		{"80ms", 80 * time.Millisecond, true},
		{"0", 0, true},
		{"-5s", 0, false},
		{"-1", 0, false},
		{"abc", 0, false},
		{"", 0, false},
	} {
		d := time.Duration(-42)
		err := durationFlag(&d)(c.in)
		switch {
		case c.ok && (err != nil || d != c.want):
			t.Errorf("%q: got %v, %v; want %v", c.in, d, err, c.want)
		case !c.ok && (err == nil || d != -42):
			t.Errorf("%q: accepted as %v (err %v); want an error and no change", c.in, d, err)
		}
	}
}
