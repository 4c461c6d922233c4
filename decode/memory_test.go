package decode

import (
	"errors"
	"math"
	"strings"
	"testing"

	"llmserve/model"
)

func TestSizeProduct(t *testing.T) {
	cases := []struct {
		factors []int
		want    int64
		tooBig  bool
	}{
		{[]int{2, 3, 4}, 24, false},
		{[]int{0, math.MaxInt}, 0, false},
		{[]int{1 << 31, 1 << 31}, 1 << 62, false},
		{[]int{1 << 32, 1 << 32}, 0, true}, // wraps to 0 in 64-bit arithmetic
		{[]int{1 << 31, 1 << 32}, 0, true}, // 2^63 is past MaxInt64
		{[]int{2, 36, 1 << 20, 65536 * 8, 4, 1 << 20}, 0, true},
	}
	for _, c := range cases {
		got, err := sizeProduct("test", c.factors...)
		if c.tooBig {
			if !errors.Is(err, errTooLarge) {
				t.Errorf("sizeProduct(%v) = %d, %v; want an overflow error", c.factors, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("sizeProduct(%v) = %d, %v; want %d", c.factors, got, err, c.want)
		}
	}
	if _, err := sizeProduct("test", 4, -1); err == nil {
		t.Error("negative factor accepted")
	}
	if _, err := sizeSum("test", math.MaxInt64, 1); !errors.Is(err, errTooLarge) {
		t.Errorf("sizeSum past MaxInt64: err = %v", err)
	}
}

func TestParseMemAvailable(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"MemTotal:       32000000 kB\nMemFree:  100 kB\nMemAvailable:   23813756 kB\n", 23813756 * 1024, true},
		{"MemTotal:       32000000 kB\n", 0, false},
		{"MemAvailable: lots kB\n", 0, false},
		{"MemAvailable: 99999999999999999999 kB\n", 0, false},
	}
	for _, c := range cases {
		got, ok := parseMemAvailable([]byte(c.in))
		if got != c.want || ok != c.ok {
			t.Errorf("parseMemAvailable(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// TestCPUMemoryCheck sizes the KV cache of attention.key_length 65536 with
// 8 KV heads (the file that used to kill the process) and of ordinary
// models against a given amount of available memory.
func TestCPUMemoryCheck(t *testing.T) {
	m := func(layers, kvHeads, headDim int) *model.Model {
		return &model.Model{
			Config: model.Config{Embd: 64, Heads: kvHeads, KVHeads: kvHeads, HeadDim: headDim, FFN: 128, Vocab: 100},
			Layers: make([]model.Layer, layers),
		}
	}
	const gib = 1 << 30
	cases := []struct {
		name  string
		m     *model.Model
		opts  CPUOptions
		avail int64
		ok    bool
	}{
		{"small fits", m(2, 4, 16), CPUOptions{Context: 256, MaxSeqs: 1, MaxBatch: 16, Threads: 2}, gib, true},
		{"unknown memory: only overflow is checked", m(2, 4, 16), CPUOptions{Context: 1 << 20, MaxSeqs: 64, MaxBatch: 16, Threads: 2}, -1, true},
		{"key_length 65536 × 8 KV heads", m(2, 8, 65536), CPUOptions{Context: 4096, MaxSeqs: 1, MaxBatch: 512, Threads: 2}, 16 * gib, false},
		{"context too large for memory", m(32, 8, 128), CPUOptions{Context: 1 << 20, MaxSeqs: 4, MaxBatch: 512, Threads: 2}, 64 * gib, false},
		{"overflowing product", m(1<<20, 8, 65536), CPUOptions{Context: 1 << 24, MaxSeqs: 1 << 10, MaxBatch: 512, Threads: 2}, -1, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := checkCPUMemory(c.m, c.opts, c.avail)
			if c.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, errTooLarge) {
				t.Fatalf("err = %v, want a refusal", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}
