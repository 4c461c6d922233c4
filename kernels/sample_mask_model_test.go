package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// maskKinds are the masks the masked-pick tests give their rows.
var maskKinds = []string{"all", "one", "none", "half", "sparse", "unflagged"}

// randMask is a mask of kind over n tokens, as Words words of uint64.
func randMask(rng *rand.Rand, kind string, n, words int) []uint64 {
	m := make([]uint64, words)
	for i := range n {
		var on bool
		switch kind {
		case "all", "unflagged":
			on = true
		case "half":
			on = rng.IntN(2) == 0
		case "sparse":
			on = rng.IntN(200) == 0
		}
		if on {
			m[i/64] |= 1 << (i % 64)
		}
	}
	if kind == "one" {
		i := rng.IntN(n)
		m[i/64] |= 1 << (i % 64)
	}
	return m
}

// maskedRow is x as sample_mask leaves it under mask m: -Inf where m bans a
// token or x is NaN, the largest float for +Inf. alive says whether a
// finite logit is left.
func maskedRow(x []float32, m []uint64) (out []float32, alive bool) {
	out = make([]float32, len(x))
	for i, v := range x {
		switch {
		case m[i/64]>>(i%64)&1 == 0 || v != v:
			out[i] = float32(math.Inf(-1))
		case v > math.MaxFloat32:
			out[i] = math.MaxFloat32
		default:
			out[i] = v
		}
		alive = alive || !math.IsInf(float64(out[i]), -1)
	}
	return out, alive
}

// words32 is m as the uint32 words of its little-endian bytes.
func words32(m []uint64) []uint32 {
	w := make([]uint32, 2*len(m))
	for i, v := range m {
		w[2*i], w[2*i+1] = uint32(v), uint32(v>>32)
	}
	return w
}

// maskThreads is MASK_THREADS of sample_mask.cu.
const maskThreads = 1024

// sampleMaskModel runs sample_mask.cu's loops over one row in Go, thread
// by thread: four logits per load when the row starts 16-byte aligned,
// then one at a time. It returns the row as the kernel leaves it, whether
// a finite logit is left, and how often each logit was visited.
func sampleMaskModel(x []float32, aligned bool, m []uint64) (out []float32, alive bool, visits []int) {
	n := len(x)
	out, visits = slices.Clone(x), make([]int, n)
	masked := func(v float32, allowed bool) float32 {
		switch {
		case !allowed || v != v:
			return float32(math.Inf(-1))
		case v > math.MaxFloat32:
			return math.MaxFloat32
		}
		return v
	}
	n4 := 0
	if aligned {
		n4 = n / 4
	}
	for t := range maskThreads {
		for i := t; i < n4; i += maskThreads {
			b := uint32(m[i>>4]>>((4*i)&63)) & 15
			for j := range 4 {
				out[4*i+j] = masked(x[4*i+j], b>>j&1 == 1)
				alive = alive || out[4*i+j] > float32(math.Inf(-1))
				visits[4*i+j]++
			}
		}
		for i := 4*n4 + t; i < n; i += maskThreads {
			out[i] = masked(x[i], m[i>>6]>>(i&63)&1 == 1)
			alive = alive || out[i] > float32(math.Inf(-1))
			visits[i]++
		}
	}
	return out, alive, visits
}

// TestSampleMaskModel checks the Go model of sample_mask's loops against
// maskedRow (the documented result) on rows aligned and not, of lengths
// around the float4 and word boundaries and the 128256-token vocabulary:
// every logit is visited once and ends as documented.
func TestSampleMaskModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 3, 4, 63, 64, 65, 1001, 4096, 4100, 128256} {
		for _, aligned := range []bool{true, false} {
			for _, kind := range maskKinds {
				x := make([]float32, n)
				for i := range x {
					switch rng.IntN(50) {
					case 0:
						x[i] = float32(math.NaN())
					case 1:
						x[i] = float32(math.Inf(1 - 2*rng.IntN(2)))
					default:
						x[i] = float32(rng.NormFloat64())
					}
				}
				m := randMask(rng, kind, n, (n+63)/64)
				got, alive, visits := sampleMaskModel(x, aligned, m)
				want, wantAlive := maskedRow(x, m)
				if alive != wantAlive {
					t.Errorf("n %d aligned %v %s: alive %v, want %v", n, aligned, kind, alive, wantAlive)
				}
				for i := range want {
					if visits[i] != 1 || math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("n %d aligned %v %s: logit %d visited %d times, %g, want once, %g", n, aligned, kind, i, visits[i], got[i], want[i])
					}
				}
			}
		}
	}
}
