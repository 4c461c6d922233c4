package decode

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestStepEnd checks the GPU engine's split of a batch into steps: each
// step holds 1..rows tokens and at most wanted rows of logits, steps cover
// the batch in order, and a step ends only where the next token would
// break a limit.
func TestStepEnd(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct{ n, rows, wanted int }{
		{1, 512, 64}, {512, 512, 64}, {513, 512, 64}, {1300, 512, 64}, {200, 64, 64}, {100, 512, 1}, {70, 8, 3},
	} {
		for _, share := range []float64{0, 0.01, 0.5, 1} {
			t.Run(fmt.Sprintf("n%d/rows%d/wanted%d/share%v", c.n, c.rows, c.wanted, share), func(t *testing.T) {
				var b Batch
				for i := 0; i < c.n; i++ {
					b.Add(1, int32(i), 0, r.Float64() < share || (share > 0 && i == c.n-1))
				}
				steps := 0
				for lo := 0; lo < b.Len(); {
					hi := stepEnd(&b, lo, c.rows, c.wanted)
					if hi <= lo || hi-lo > c.rows {
						t.Fatalf("step [%d, %d): want 1..%d tokens", lo, hi, c.rows)
					}
					w := 0
					for _, l := range b.Logits[lo:hi] {
						if l {
							w++
						}
					}
					if w > c.wanted {
						t.Fatalf("step [%d, %d): %d wanted rows, at most %d", lo, hi, w, c.wanted)
					}
					if hi < b.Len() && hi-lo < c.rows && !(b.Logits[hi] && w == c.wanted) {
						t.Fatalf("step [%d, %d) ended early: the next token fits", lo, hi)
					}
					lo, steps = hi, steps+1
				}
				if min := (c.n + c.rows - 1) / c.rows; steps < min {
					t.Fatalf("%d steps for %d tokens in steps of %d", steps, c.n, c.rows)
				}
			})
		}
	}
	// A lone wanted row with wanted 0 still makes progress.
	var b Batch
	b.Add(1, 0, 0, true)
	if hi := stepEnd(&b, 0, 512, 0); hi != 1 {
		t.Errorf("stepEnd with no room for logits = %d, want 1 (a step takes a token)", hi)
	}
}
