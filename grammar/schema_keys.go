package grammar

import (
	"slices"
	"strings"
)

// keyTrie is a trie of property names as JSON writes them (no quotes).
type keyTrie struct {
	kids map[rune]*keyTrie
	end  bool // a name ends here
}

// otherKey returns an expression for a JSON string that is none of keys,
// for the names of additional properties. ok is false when a key needs an
// escape in JSON, which this does not handle (the caller then accepts
// any string). A name written with needless escapes ("\u006b" for "k")
// is not recognized as a known one.
func (t *translator) otherKey(keys []string) (expr string, ok bool) {
	root := &keyTrie{}
	for _, k := range keys {
		enc := jsonString(k)
		enc = enc[1 : len(enc)-1]
		if strings.ContainsRune(enc, '\\') {
			return "", false
		}
		n := root
		for _, r := range enc {
			if n.kids == nil {
				n.kids = map[rune]*keyTrie{}
			}
			if n.kids[r] == nil {
				n.kids[r] = &keyTrie{}
			}
			n = n.kids[r]
		}
		n.end = true
	}
	char := t.prim("char")
	escape := `"\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) ` + char + "*"
	var rest func(n *keyTrie) string
	rest = func(n *keyTrie) string {
		var alts []string
		cls := `[^"\\\x7F\x00-\x1F`
		var rs []rune
		for r := range n.kids {
			rs = append(rs, r)
		}
		slices.Sort(rs)
		for _, r := range rs {
			lit := literal(string(r))
			alts = append(alts, lit+" "+rest(n.kids[r]))
			cls += strings.NewReplacer(`"`, `\"`, `\`, `\\`, `]`, `\]`, `[`, `\[`, `-`, `\-`, `^`, `\^`).Replace(lit[1 : len(lit)-1])
		}
		alts = append(alts, cls+"] "+char+"*", escape)
		if !n.end {
			alts = append(alts, `""`)
		}
		return "( " + strings.Join(alts, " | ") + " )"
	}
	return `"\"" ` + rest(root) + ` "\""`, true
}
