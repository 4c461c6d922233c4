package kernels

import (
	"fmt"
	"testing"
)

// attentionSplitRange is attention_part's (attention_part.cuh) range of split
// split of splits for a token at position p with a window (0: none):
// positions [t0, t1).
func attentionSplitRange(p, window, split, splits int) (t0, t1 int) {
	first := 0
	if window > 0 {
		first = max(0, p+1-window)
	}
	n := p + 1 - first
	per := (n + splits - 1) / splits
	return first + min(split*per, n), first + min(split*per+per, n)
}

// TestAttentionSplitCover checks, on a model of the kernel's index arithmetic,
// that the splits of attention_part cover the positions a token sees
// (the last window of them up to its own) once each, in order, for the
// split counts attentionSplits gives (1 to 64).
func TestAttentionSplitCover(t *testing.T) {
	for _, ctx := range []int{1, 16, 40, 64, 300, 1024, 4096} {
		splits := min(max(ctx/16, 1), 64)
		for _, window := range []int{0, 1, 2, 8, 33, 4096} {
			t.Run(fmt.Sprintf("ctx%d_w%d", ctx, window), func(t *testing.T) {
				for p := 0; p < ctx; p++ {
					first := 0
					if window > 0 {
						first = max(0, p+1-window)
					}
					next, nonEmpty := first, 0
					for s := 0; s < splits; s++ {
						t0, t1 := attentionSplitRange(p, window, s, splits)
						if t0 > t1 || (t0 < t1 && t0 != next) {
							t.Fatalf("p %d: split %d covers [%d, %d), want it to start at %d", p, s, t0, t1, next)
						}
						if t0 < t1 {
							nonEmpty++
							next = t1
						}
					}
					if next != p+1 || nonEmpty == 0 {
						t.Fatalf("p %d: the splits cover [%d, %d), want [%d, %d]", p, first, next, first, p)
					}
				}
			})
		}
	}
}
