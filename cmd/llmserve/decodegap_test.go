package main

import (
	"testing"
	"time"

	"llmserve/decode"
)

// TestDecodeGap checks --max-decode-gap's resolution: as given (0 off),
// else 50 ms for an engine other than the CPU one and 0 for the CPU.
func TestDecodeGap(t *testing.T) {
	var cpu decode.Engine = (*decode.CPUEngine)(nil)
	for _, c := range []struct {
		name    string
		flagged time.Duration
		eng     decode.Engine
		want    time.Duration
	}{
		{"not given, CPU", -1, cpu, 0},
		{"not given, another engine", -1, nil, gpuDecodeGap},
		{"off, another engine", 0, nil, 0},
		{"given, CPU", 30 * time.Millisecond, cpu, 30 * time.Millisecond},
		{"given, another engine", 80 * time.Millisecond, nil, 80 * time.Millisecond},
	} {
		if got := decodeGap(c.flagged, c.eng); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	var o serveOptions
	fs := serveFlags(&o)
	if err := fs.Parse([]string{"-m", "x.gguf"}); err != nil {
		t.Fatal(err)
	}
	if o.maxGap >= 0 {
		t.Errorf("--max-decode-gap not given: %v, want the not-given mark (negative)", o.maxGap)
	}
	if err := fs.Parse([]string{"--max-decode-gap", "0"}); err != nil || o.maxGap != 0 {
		t.Errorf("--max-decode-gap 0: %v (%v), want 0", o.maxGap, err)
	}
}
