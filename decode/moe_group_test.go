package decode

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestMoEGroupedStep checks which steps group an expert mixture by
// expert: none a graph bucket may hold (any size Buckets.Validate takes),
// whether run eagerly or captured, and every larger one unless a capture
// is under way.
func TestMoEGroupedStep(t *testing.T) {
	for B := 1; B <= MaxBucket; B++ {
		for _, capturing := range []bool{false, true} {
			if moeGroupedStep(B, capturing) {
				t.Errorf("a step of %d tokens (capturing %v) groups: a graph bucket may hold it", B, capturing)
			}
		}
	}
	for _, c := range []struct {
		B         int
		capturing bool
		want      bool
	}{
		{MaxBucket + 1, false, true},
		{100, false, true},
		{512, false, true},
		{MaxBucket + 1, true, false},
		{512, true, false},
	} {
		if got := moeGroupedStep(c.B, c.capturing); got != c.want {
			t.Errorf("moeGroupedStep(%d, capturing %v) = %v, want %v", c.B, c.capturing, got, c.want)
		}
	}
}

// refGroups is the grouping of pick by a plain reading of its definition:
// for each expert in turn, the slots that chose it in ascending order.
func refGroups(pick []int32, experts int) (order []int32, count []int) {
	count = make([]int, experts)
	for e := 0; e < experts; e++ {
		for s, p := range pick {
			if int(p) == e {
				order = append(order, int32(s))
				count[e]++
			}
		}
	}
	return order, count
}

// TestMoEGroups checks the grouping of a step's routing against refGroups:
// hand-made cases (experts no token chose, one token, every token on one
// expert) and random routings of distinct experts per token, reusing one
// moeGroups across them as the engine does; order and inv must be inverse
// permutations, each expert's rows contiguous from its start.
func TestMoEGroups(t *testing.T) {
	type tc struct {
		name          string
		pick          []int32
		experts, used int
	}
	cases := []tc{
		{"one token", []int32{3, 1}, 4, 2},
		{"experts 0 and 3 unchosen", []int32{1, 2, 2, 1, 1, 2}, 4, 2},
		{"all on one expert", []int32{5, 5, 5, 5, 5}, 8, 1},
		{"last expert only unchosen", []int32{0, 1, 2, 1, 0, 2}, 4, 3},
	}
	rng := rand.New(rand.NewPCG(3, 9))
	for _, sz := range []struct{ B, E, k int }{{65, 8, 2}, {100, 4, 2}, {512, 8, 2}, {77, 16, 4}, {129, 3, 3}} {
		pick := make([]int, 0, sz.B*sz.k)
		for b := 0; b < sz.B; b++ {
			pick = append(pick, rng.Perm(sz.E)[:sz.k]...)
		}
		cases = append(cases, tc{"random", moePicks(pick), sz.E, sz.k})
	}
	var g moeGroups
	for _, c := range cases {
		if err := g.group(c.pick, c.experts); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		order, count := refGroups(c.pick, c.experts)
		if !slices.Equal(g.order, order) || !slices.Equal(g.count, count) {
			t.Errorf("%s (%d slots, %d experts): order %v counts %v, want %v %v", c.name, len(c.pick), c.experts, g.order, g.count, order, count)
			continue
		}
		for s := range c.pick {
			if r := g.inv[s]; r < 0 || int(r) >= len(g.order) || g.order[r] != int32(s) {
				t.Errorf("%s: slot %d at grouped row %d, which holds another slot", c.name, s, r)
			}
		}
		at := 0
		for e := range c.experts {
			if g.start[e] != at {
				t.Errorf("%s: expert %d starts at row %d, want %d", c.name, e, g.start[e], at)
			}
			for r := g.start[e]; r < g.start[e]+g.count[e]; r++ {
				if s := g.order[r]; c.pick[s] != int32(e) {
					t.Errorf("%s: row %d of expert %d holds slot %d of expert %d", c.name, r, e, s, c.pick[s])
				}
			}
			at += g.count[e]
		}
	}
	for _, bad := range []struct {
		pick    []int32
		experts int
	}{{[]int32{0, 4}, 4}, {[]int32{-1}, 4}, {[]int32{0}, 0}} {
		if err := g.group(bad.pick, bad.experts); err == nil {
			t.Errorf("group(%v, %d experts): no error", bad.pick, bad.experts)
		}
	}
}

func moePicks(v []int) []int32 {
	out := make([]int32, len(v))
	for i, x := range v {
		out[i] = int32(x)
	}
	return out
}
