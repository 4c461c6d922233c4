//go:build cuda

package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"llmserve/internal/cuda"
)

// refPick picks a token from x with p in f64, in the order of sample.cu's
// chain; margin is how close the draw came to an edge of the picked
// token's interval (as a share of the total weight), or the top-p mass
// to p at the cut, where f32 sums may rightly decide otherwise.
//
// A top-p set without top-k that holds more than SampleCap candidates is
// left to the host: refPick returns -1 for it, as the device must.
func refPick(x []float32, p Pick) (tok int32, margin float64) {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	if p.Mode == PickGreedy || p.Temperature <= 0 {
		return int32(best), 1
	}
	ids := make([]int, len(x))
	for i := range ids {
		ids[i] = i
	}
	byLogit := func(a, b int) int {
		switch {
		case x[a] > x[b]:
			return -1
		case x[a] < x[b]:
			return 1
		}
		return a - b
	}
	margin = 1
	sorted := false
	if p.TopK > 0 && p.TopK < len(x) {
		slices.SortFunc(ids, byLogit)
		ids, sorted = ids[:p.TopK], true
	}
	if p.TopP > 0 && p.TopP < 1 {
		if !sorted {
			slices.SortFunc(ids, byLogit)
		}
		mx := float64(x[ids[0]])
		var z float64
		for _, i := range ids {
			z += math.Exp(float64(x[i]) - mx)
		}
		var cum float64
		for k, i := range ids {
			before := cum
			cum += math.Exp(float64(x[i])-mx) / z
			if !sorted && k == SampleCap-1 && cum < float64(p.TopP) {
				// The device's candidates hold too little mass: the host
				// picks, unless rounding could put the mass past p.
				return -1, float64(p.TopP) - cum
			}
			if cum >= float64(p.TopP) {
				margin = min(margin, float64(p.TopP)-before, cum-float64(p.TopP))
				ids = ids[:k+1]
				break
			}
		}
	}
	if p.MinP > 0 {
		mx := x[ids[0]]
		for _, i := range ids {
			mx = max(mx, x[i])
		}
		cut := mx + float32(math.Log(float64(p.MinP)))
		ids = slices.DeleteFunc(ids, func(i int) bool { return x[i] < cut })
	}
	mx := x[ids[0]]
	for _, i := range ids {
		mx = max(mx, x[i])
	}
	w := make([]float64, len(ids))
	var total float64
	for k, i := range ids {
		w[k] = math.Exp(float64(x[i]-mx) / float64(p.Temperature))
		total += w[k]
	}
	target := float64(p.U) * total
	var cum float64
	tok = int32(ids[len(ids)-1])
	for k, i := range ids {
		before := cum
		cum += w[k]
		if target < cum {
			return int32(i), min(margin, (target-before)/total, (cum-target)/total)
		}
	}
	return tok, 0
}

// TestSample checks the device's picks against refPick over many rows and
// parameter sets; a row whose draw falls within 1e-5 of an edge of the
// picked token's interval may differ and is not compared (the test fails
// if more than half the rows are skipped: a flat distribution over a large
// vocabulary has narrow intervals).
func TestSample(t *testing.T) {
	params := []Pick{
		{Mode: PickGreedy},
		{Mode: PickRandom, Temperature: 0.8},
		{Mode: PickRandom, Temperature: 1, TopK: 40},
		{Mode: PickRandom, Temperature: 0.7, TopK: 40, TopP: 0.9, MinP: 0.05},
		{Mode: PickRandom, Temperature: 1.3, TopP: 0.95},
		{Mode: PickRandom, Temperature: 1, MinP: 0.1},
		{Mode: PickRandom, Temperature: 0.5, TopK: 1024, TopP: 0.5},
		{Mode: PickRandom, Temperature: 1, TopK: 1},
	}
	for _, n := range []int{1000, 32000, 128256} {
		for pi, p := range params {
			t.Run(fmt.Sprintf("n%d/params%d", n, pi), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(n), uint64(pi)))
				g := newBuffers(t)
				rows := 64
				x := make([]float32, rows*n)
				for i := range x {
					x[i] = float32(rng.NormFloat64() * 3)
					if i/n%4 == 3 {
						x[i] = float32(math.Round(float64(x[i]))) // many ties
					}
				}
				words := make([]uint32, rows*PickWords)
				picks := make([]Pick, rows)
				for r := range picks {
					picks[r] = p
					picks[r].U = rng.Float32()
					picks[r].Encode(words[r*PickWords:])
				}
				pb, err := cuda.Upload(dev.Context(), "test picks", words)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { pb.Free() })
				out := g.i32(make([]int32, rows))
				if err := dev.Sample(g.f32(x, rows, n), pb.Ptr(), out); err != nil {
					t.Fatal(err)
				}
				got := readI32(t, out)
				skipped := 0
				for r := range rows {
					want, margin := refPick(x[r*n:(r+1)*n], picks[r])
					if margin < 1e-5 {
						skipped++
						continue
					}
					if got[r] != want {
						t.Errorf("row %d (u %.6f): picked %d, want %d", r, picks[r].U, got[r], want)
					}
				}
				t.Logf("%d of %d rows compared", rows-skipped, rows)
				if skipped > rows/2 {
					t.Errorf("%d of %d rows too close to a boundary to compare", skipped, rows)
				}
			})
		}
	}
}

// TestSampleLeavesRows checks that a top-k above the cap is left to the
// host (-1) and that rows of mode PickNone are not written.
func TestSampleLeavesRows(t *testing.T) {
	g := newBuffers(t)
	n := 5000
	x := randF32(rand.New(rand.NewPCG(1, 2)), 2*n)
	words := make([]uint32, 2*PickWords)
	Pick{Mode: PickRandom, Temperature: 1, TopK: SampleCap + 1, U: 0.5}.Encode(words)
	Pick{Mode: PickNone}.Encode(words[PickWords:])
	pb, err := cuda.Upload(dev.Context(), "test picks", words)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pb.Free() })
	out := g.i32([]int32{7, 7})
	if err := dev.Sample(g.f32(x, 2, n), pb.Ptr(), out); err != nil {
		t.Fatal(err)
	}
	if got := readI32(t, out); got[0] != -1 || got[1] != 7 {
		t.Errorf("got %v, want [-1 7]", got)
	}
}
