package kernels

import (
	"fmt"
	"sync"
	"testing"
)

// TestPoolFor checks that For covers every index exactly once.
func TestPoolFor(t *testing.T) {
	for _, threads := range []int{1, 2, 5} {
		p := NewPool(threads)
		for _, n := range []int{0, 1, 2, 7, 100, 1001} {
			for _, chunk := range []int{0, 1, 3, 2000} {
				hits := make([]int, n)
				p.ForChunk(n, chunk, func(lo, hi int) {
					for i := lo; i < hi; i++ {
						hits[i]++
					}
				})
				for i, h := range hits {
					if h != 1 {
						t.Fatalf("threads=%d n=%d chunk=%d: index %d visited %d times", threads, n, chunk, i, h)
					}
				}
			}
		}
		p.Close()
	}
}

// TestPoolConcurrent runs loops from several goroutines at once.
func TestPoolConcurrent(t *testing.T) {
	p := NewPool(3)
	defer p.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 50; k++ {
				out := make([]int, 97)
				p.For(len(out), func(lo, hi int) {
					for i := lo; i < hi; i++ {
						out[i] = i * g
					}
				})
				for i, v := range out {
					if v != i*g {
						errs <- fmt.Errorf("goroutine %d: out[%d] = %d", g, i, v)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
