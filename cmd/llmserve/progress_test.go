package main

import (
	"strings"
	"testing"
)

func TestProgressBar(t *testing.T) {
	var b strings.Builder
	p := progressBar(&b, "loading")
	for _, done := range []int64{0, 1, 1, 50, 99, 100} {
		p(done, 100)
	}
	out := b.String()
	if n := strings.Count(out, "\r"); n != 5 {
		t.Errorf("%d redraws, want 5 (one per new percentage):\n%q", n, out)
	}
	if !strings.Contains(out, "100% [##############################]") || !strings.HasSuffix(out, "\n") {
		t.Errorf("the bar does not end full with a newline:\n%q", out)
	}
}
