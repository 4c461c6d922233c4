package decode

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxBucket is the largest graph bucket: the most tokens of a step that
// runs from a captured CUDA graph (and the most rows of logits one step
// computes on the GPU).
const MaxBucket = 64

// Buckets are the step sizes, in tokens, that the GPU engine captures one
// CUDA graph for, ascending in 1..MaxBucket. A step of n tokens is padded
// to the smallest bucket that holds it; a step of more tokens than the
// largest bucket runs eagerly at its own size.
type Buckets []int

// DefaultBuckets are the powers of two up to MaxBucket.
func DefaultBuckets() Buckets { return Buckets{1, 2, 4, 8, 16, 32, 64} }

// ParseBuckets reads a comma-separated list of step sizes ("1,2,4,8") and
// validates it.
func ParseBuckets(s string) (Buckets, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("decode: graph buckets %q: empty list (want ascending sizes in 1..%d, e.g. 1,2,4,8)", s, MaxBucket)
	}
	fields := strings.Split(s, ",")
	b := make(Buckets, 0, len(fields))
	for i, f := range fields {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("decode: graph buckets %q: item %d (%q) is not a whole number", s, i+1, f)
		}
		b = append(b, n)
	}
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("decode: graph buckets %q: %w", s, err)
	}
	return b, nil
}

// Validate checks that b holds at least one size, every size in
// 1..MaxBucket, strictly ascending.
func (b Buckets) Validate() error {
	if len(b) == 0 {
		return fmt.Errorf("no sizes (want ascending sizes in 1..%d)", MaxBucket)
	}
	for i, n := range b {
		if n < 1 || n > MaxBucket {
			return fmt.Errorf("size %d out of range 1..%d", n, MaxBucket)
		}
		if i > 0 && n <= b[i-1] {
			return fmt.Errorf("size %d follows %d (sizes must ascend, each once)", n, b[i-1])
		}
	}
	return nil
}

// Max is the largest bucket, 0 for none.
func (b Buckets) Max() int {
	if len(b) == 0 {
		return 0
	}
	return b[len(b)-1]
}

// Choose returns the index of the smallest bucket that holds n tokens; ok
// is false when n is below 1 or above the largest bucket (such a step runs
// eagerly at n tokens).
func (b Buckets) Choose(n int) (i int, ok bool) {
	if n < 1 {
		return 0, false
	}
	for i, size := range b {
		if n <= size {
			return i, true
		}
	}
	return 0, false
}

// String is the list as ParseBuckets reads it.
func (b Buckets) String() string {
	s := make([]string, len(b))
	for i, n := range b {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}
