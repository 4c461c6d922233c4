package grammar

import "fmt"

// elemKind is what one element of a rule's alternative matches.
type elemKind uint8

const (
	elemEnd  elemKind = iota // end of an alternative
	elemChar                 // one character of a class
	elemRule                 // a reference to a rule
)

// elem is one element of an alternative: arg is the class index of an
// elemChar, the rule index of an elemRule, unused for elemEnd.
type elem struct {
	kind elemKind
	arg  int32
}

// rule is a named set of alternatives.
type rule struct {
	name string  // as written, or "<parent>-<n>" for rules made from groups and repetitions
	alts []int32 // start of each alternative in Grammar.elems
}

// runeRange is a closed range of code points.
type runeRange struct{ lo, hi rune }

// class is a set of code points: the union of ranges, or its complement.
type class struct {
	ranges  []runeRange // sorted by lo, merged
	negated bool
}

// Grammar is a compiled grammar. It is immutable and safe for concurrent
// use.
type Grammar struct {
	elems   []elem  // every alternative of every rule, each ended by an elemEnd
	rules   []rule  // [rules]
	classes []class // [classes] referenced by elemChar elements
	root    int32   // index of the start rule
}

// Limits bound what compiling a grammar may build.
const (
	maxElems   = 1 << 20 // elements of all alternatives, repetitions expanded
	maxRepeat  = 10000   // the largest bound of a {m,n} repetition
	maxClasses = 1 << 18 // character classes (one per literal character)
)

// match reports whether class ci contains c.
func (g *Grammar) match(ci int32, c rune) bool {
	cl := &g.classes[ci]
	in := false
	for _, r := range cl.ranges {
		if c < r.lo {
			break
		}
		if c <= r.hi {
			in = true
			break
		}
	}
	return in != cl.negated
}

// matchRange reports whether class ci contains some code point of [lo, hi].
func (g *Grammar) matchRange(ci int32, lo, hi rune) bool {
	cl := &g.classes[ci]
	if !cl.negated {
		for _, r := range cl.ranges {
			if r.lo <= hi && lo <= r.hi {
				return true
			}
		}
		return false
	}
	// The complement misses [lo, hi] only when one range covers it all
	// (ranges are merged, so no two of them can share the cover).
	for _, r := range cl.ranges {
		if r.lo <= lo && hi <= r.hi {
			return false
		}
	}
	return true
}

// Rules returns the number of rules, generated ones included.
func (g *Grammar) Rules() int { return len(g.rules) }

// String names the grammar's size, for logs.
func (g *Grammar) String() string {
	return fmt.Sprintf("grammar(%d rules, %d elements, root %q)", len(g.rules), len(g.elems), g.rules[g.root].name)
}
