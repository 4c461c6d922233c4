package decode

import "fmt"

// moeGroupedStep says whether the GPU engine runs an expert mixture over a
// step of B tokens grouped by expert (gpu_moe_cuda.go): each expert's
// products over the rows of the tokens that chose it only. The grouping
// reads the step's routing back to the host, which a captured CUDA graph
// cannot replay, so only a step that runs eagerly groups: one of more
// tokens than the largest graph bucket (MaxBucket; chunk runs such a step
// at its own size, never from a graph), and never while a graph is being
// captured (capturing). Smaller steps keep the paths that read nothing
// back, so a bucket's eager launches and its graph replay compute the same
// bits.
func moeGroupedStep(B int, capturing bool) bool { return B > MaxBucket && !capturing }

// moeGroups is a step's routing grouped by expert: slot s = b·Used + j is
// token b's j-th chosen expert; the grouped order lists the slots of
// expert 0, then of expert 1, ..., each expert's by token.
type moeGroups struct {
	count []int   // [Experts] the slots that chose each expert (0 for an expert no token chose)
	start []int   // [Experts] each expert's first row in the grouped order
	order []int32 // [slots] grouped row r holds slot order[r] (token order[r]/Used)
	inv   []int32 // [slots] slot s lies at grouped row inv[s]
}

// group fills g from pick, the slots' experts (len(pick) slots), for
// experts experts, reusing g's arrays where they are large enough. An
// expert outside [0, experts) is an error.
func (g *moeGroups) group(pick []int32, experts int) error {
	if experts < 1 {
		return fmt.Errorf("moe grouping: %d experts", experts)
	}
	n := len(pick)
	g.count, g.start = moeSized(g.count, experts), moeSized(g.start, experts)
	g.order, g.inv = moeSized(g.order, n), moeSized(g.inv, n)
	clear(g.count)
	for s, e := range pick {
		if e < 0 || int(e) >= experts {
			return fmt.Errorf("moe grouping: slot %d chose expert %d of %d", s, e, experts)
		}
		g.count[e]++
	}
	at := 0
	for e, c := range g.count {
		g.start[e] = at
		at += c
	}
	// The slots in ascending order, so each expert's rows go by token.
	fill := append([]int(nil), g.start...)
	for s, e := range pick {
		r := fill[e]
		g.order[r], g.inv[s] = int32(s), int32(r)
		fill[e]++
	}
	return nil
}

// moeSized returns s with length n, reallocated only when its capacity is
// short.
func moeSized[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
