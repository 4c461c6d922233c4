package grammar

import (
	"fmt"
	"slices"
)

// builder collects rules while a grammar is parsed, then flattens them.
type builder struct {
	names   map[string]int32 // user rule name -> rule index
	rules   []brule          // [rules] defined or referenced so far
	classes []class          // [classes]
	chars   map[rune]int32   // single-character class of each literal character seen
	nelems  int              // elements so far, for the maxElems bound
}

// brule is a rule under construction.
type brule struct {
	name    string
	alts    [][]elem // alternatives without their elemEnd
	defined bool
	ref     int // byte offset of the first reference, for "undefined rule" errors
}

func newBuilder() *builder {
	return &builder{names: map[string]int32{}, chars: map[rune]int32{}}
}

// symbol returns the index of the user rule called name, creating it on
// first use; off is where it is referenced.
func (b *builder) symbol(name string, off int) int32 {
	if i, ok := b.names[name]; ok {
		return i
	}
	i := int32(len(b.rules))
	b.rules = append(b.rules, brule{name: name, ref: off})
	b.names[name] = i
	return i
}

// generated adds a rule made for a group or repetition inside parent.
func (b *builder) generated(parent int32, alts [][]elem) (int32, error) {
	if err := b.grow(alts); err != nil {
		return 0, err
	}
	i := int32(len(b.rules))
	b.rules = append(b.rules, brule{name: fmt.Sprintf("%s-%d", b.rules[parent].name, i), alts: alts, defined: true})
	return i, nil
}

// grow counts the elements of alts against maxElems.
func (b *builder) grow(alts [][]elem) error {
	for _, a := range alts {
		b.nelems += len(a) + 1
	}
	if b.nelems > maxElems {
		return fmt.Errorf("grammar has more than %d elements", maxElems)
	}
	return nil
}

// charClass returns the index of a class matching exactly c.
func (b *builder) charClass(c rune) (int32, error) {
	if i, ok := b.chars[c]; ok {
		return i, nil
	}
	i, err := b.addClass(class{ranges: []runeRange{{c, c}}})
	if err == nil {
		b.chars[c] = i
	}
	return i, err
}

// addClass adds cl with its ranges sorted and merged.
func (b *builder) addClass(cl class) (int32, error) {
	if len(b.classes) >= maxClasses {
		return 0, fmt.Errorf("grammar has more than %d character classes", maxClasses)
	}
	slices.SortFunc(cl.ranges, func(x, y runeRange) int { return int(x.lo - y.lo) })
	var merged []runeRange
	for _, r := range cl.ranges {
		if n := len(merged); n > 0 && r.lo <= merged[n-1].hi+1 {
			merged[n-1].hi = max(merged[n-1].hi, r.hi)
			continue
		}
		merged = append(merged, r)
	}
	cl.ranges = merged
	b.classes = append(b.classes, cl)
	return int32(len(b.classes) - 1), nil
}

// repeat returns the elements that match x between lo and hi times
// (hi < 0: no upper bound), adding the rules that needs: x* becomes
// R ::= x R | ε (right recursion, which the matcher runs in constant
// stack depth), x{0,k} nests optional rules.
func (b *builder) repeat(parent int32, x elem, lo, hi int) ([]elem, error) {
	out := make([]elem, 0, lo+1)
	for range lo {
		out = append(out, x)
	}
	if err := b.grow([][]elem{out}); err != nil {
		return nil, err
	}
	if hi < 0 {
		r := int32(len(b.rules))
		if _, err := b.generated(parent, [][]elem{{x, {elemRule, r}}, {}}); err != nil {
			return nil, err
		}
		return append(out, elem{elemRule, r}), nil
	}
	if hi > lo {
		// opt_1 ::= x | ε ; opt_k ::= x opt_(k-1) | ε
		prev, err := b.generated(parent, [][]elem{{x}, {}})
		if err != nil {
			return nil, err
		}
		for k := 2; k <= hi-lo; k++ {
			if prev, err = b.generated(parent, [][]elem{{x, {elemRule, prev}}, {}}); err != nil {
				return nil, err
			}
		}
		out = append(out, elem{elemRule, prev})
	}
	return out, nil
}

// finish checks the rules and flattens them into a Grammar.
func (b *builder) finish(src, root string) (*Grammar, error) {
	for i := range b.rules {
		if r := &b.rules[i]; !r.defined {
			line, col := position(src, r.ref)
			return nil, &SyntaxError{Line: line, Column: col, Msg: fmt.Sprintf("rule %q is used but not defined", r.name)}
		}
	}
	ri, ok := b.names[root]
	if !ok {
		return nil, fmt.Errorf("grammar: no rule %q to start from", root)
	}
	g := &Grammar{classes: b.classes, root: ri, rules: make([]rule, len(b.rules))}
	for i, r := range b.rules {
		g.rules[i].name = r.name
		for _, a := range r.alts {
			g.rules[i].alts = append(g.rules[i].alts, int32(len(g.elems)))
			g.elems = append(g.elems, a...)
			g.elems = append(g.elems, elem{kind: elemEnd})
		}
	}
	if err := g.checkLeftRecursion(); err != nil {
		return nil, err
	}
	return g, nil
}
