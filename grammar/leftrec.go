package grammar

import "fmt"

// nullable reports, for each rule, whether it matches the empty string.
func (g *Grammar) nullable() []bool {
	null := make([]bool, len(g.rules))
	for changed := true; changed; {
		changed = false
		for i, r := range g.rules {
			if null[i] {
				continue
			}
			for _, a := range r.alts {
				if g.altNullable(a, null) {
					null[i], changed = true, true
					break
				}
			}
		}
	}
	return null
}

// altNullable reports whether the alternative starting at a matches the
// empty string, given what is known of the rules.
func (g *Grammar) altNullable(a int32, null []bool) bool {
	for p := a; ; p++ {
		switch e := g.elems[p]; e.kind {
		case elemEnd:
			return true
		case elemChar:
			return false
		case elemRule:
			if !null[e.arg] {
				return false
			}
		}
	}
}

// checkLeftRecursion refuses a grammar where a rule can reach itself
// without matching a character first: the matcher would expand it forever.
func (g *Grammar) checkLeftRecursion() error {
	null := g.nullable()
	// left[i]: the rules rule i may start with.
	left := make([][]int32, len(g.rules))
	for i, r := range g.rules {
		for _, a := range r.alts {
			for p := a; g.elems[p].kind == elemRule; p++ {
				left[i] = append(left[i], g.elems[p].arg)
				if !null[g.elems[p].arg] {
					break
				}
			}
		}
	}
	const (
		unseen = iota
		active
		finished
	)
	mark := make([]uint8, len(g.rules))
	type frame struct{ rule, next int32 }
	for start := range g.rules {
		if mark[start] != unseen {
			continue
		}
		stack := []frame{{int32(start), 0}}
		mark[start] = active
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			if int(f.next) == len(left[f.rule]) {
				mark[f.rule] = finished
				stack = stack[:len(stack)-1]
				continue
			}
			to := left[f.rule][f.next]
			f.next++
			switch mark[to] {
			case active:
				return fmt.Errorf("grammar: rule %q is left-recursive (it can reach itself before matching any character)", g.rules[to].name)
			case unseen:
				mark[to] = active
				stack = append(stack, frame{to, 0})
			}
		}
	}
	return nil
}
