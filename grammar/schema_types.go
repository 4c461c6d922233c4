package grammar

import (
	"fmt"
	"strings"
)

// count reads a non-negative integer keyword of s; ok is false when absent.
func count(s *jvalue, kw, path string) (n int, ok bool, err error) {
	v := s.get(kw)
	if v == nil {
		return 0, false, nil
	}
	if v.kind != jNumber {
		return 0, false, &SchemaError{Path: path, Keyword: kw, Msg: "must be a non-negative integer"}
	}
	if _, err := fmt.Sscanf(v.s, "%d", &n); err != nil || n < 0 || fmt.Sprint(n) != v.s {
		return 0, false, &SchemaError{Path: path, Keyword: kw, Msg: "must be a non-negative integer"}
	}
	if n > maxRepeat {
		return 0, false, &SchemaError{Path: path, Keyword: kw, Msg: fmt.Sprintf("above %d is not supported", maxRepeat)}
	}
	return n, true, nil
}

// bounds reads a minX/maxX pair into a GBNF repetition suffix for the
// items after the first `skip`: "*", "{m,}", "{m,n}" (empty when exactly
// zero more); none reports that the maximum is 0.
func bounds(s *jvalue, minKw, maxKw, path string) (lo, hi int, err error) {
	lo, _, err = count(s, minKw, path)
	if err != nil {
		return 0, 0, err
	}
	hi, hasMax, err := count(s, maxKw, path)
	if err != nil {
		return 0, 0, err
	}
	if !hasMax {
		hi = -1
	} else if hi < lo {
		return 0, 0, &SchemaError{Path: path, Keyword: maxKw, Msg: fmt.Sprintf("%d is below %s %d", hi, minKw, lo)}
	}
	return lo, hi, nil
}

// repetition writes the GBNF suffix for lo..hi repeats (hi < 0: no bound).
func repetition(lo, hi int) string {
	switch {
	case hi < 0 && lo == 0:
		return "*"
	case hi < 0:
		return fmt.Sprintf("{%d,}", lo)
	case lo == hi:
		return fmt.Sprintf("{%d}", lo)
	}
	return fmt.Sprintf("{%d,%d}", lo, hi)
}

// str returns the expression of a string schema.
func (t *translator) str(s *jvalue, path, hint string) (string, error) {
	if f := s.get("format"); f != nil {
		if f.kind != jString {
			return "", &SchemaError{Path: path, Keyword: "format", Msg: "must be a string"}
		}
		rule, ok := stringFormats[f.s]
		if !ok {
			return "", &SchemaError{Path: path, Keyword: "format", Msg: fmt.Sprintf("format %q is not supported (date, time, date-time and uuid are)", f.s)}
		}
		return t.prim(rule), nil
	}
	lo, hi, err := bounds(s, "minLength", "maxLength", path)
	if err != nil {
		return "", err
	}
	if lo == 0 && hi < 0 {
		return t.prim("string"), nil
	}
	return t.add(hint, `"\"" `+t.prim("char")+repetition(lo, hi)+` "\""`)
}

// array returns the expression of an array schema.
func (t *translator) array(s *jvalue, path, hint string) (string, error) {
	item := t.prim("value")
	if it := s.get("items"); it != nil {
		if it.kind == jArray {
			return "", &SchemaError{Path: path, Keyword: "items", Msg: "the array (tuple) form is not supported"}
		}
		var err error
		if item, err = t.visit(it, path+"/items", hint+"-item"); err != nil {
			return "", err
		}
	}
	lo, hi, err := bounds(s, "minItems", "maxItems", path)
	if err != nil {
		return "", err
	}
	ws := t.prim("ws")
	if hi == 0 {
		return t.add(hint, `"[" `+ws+` "]"`)
	}
	restHi := hi - 1
	if hi < 0 {
		restHi = -1
	}
	body := item + " " + ws
	if rep := repetition(max(lo-1, 0), restHi); rep != "{0}" {
		body += ` ( "," ` + ws + " " + item + " " + ws + " )" + rep
	}
	if lo == 0 {
		body = "( " + body + " )?"
	}
	return t.add(hint, `"[" `+ws+" "+body+` "]"`)
}

// object returns the expression of an object schema: required properties
// first, then the optional ones, each in the order of properties, then
// additional properties where they are allowed.
func (t *translator) object(s *jvalue, path, hint string) (string, error) {
	props := s.get("properties")
	if props != nil && props.kind != jObject {
		return "", &SchemaError{Path: path, Keyword: "properties", Msg: "must be an object"}
	}
	required := map[string]bool{}
	if r := s.get("required"); r != nil {
		if r.kind != jArray {
			return "", &SchemaError{Path: path, Keyword: "required", Msg: "must be an array of property names"}
		}
		for _, n := range r.arr {
			if n.kind != jString {
				return "", &SchemaError{Path: path, Keyword: "required", Msg: "must be an array of property names"}
			}
			if props.get(n.s) == nil {
				return "", &SchemaError{Path: path, Keyword: "required", Msg: fmt.Sprintf("names %q, which properties does not list", n.s)}
			}
			required[n.s] = true
		}
	}
	ap := s.get("additionalProperties")
	extra := ap != nil && (ap.kind == jObject || ap.kind == jBool && ap.b)
	if ap != nil && ap.kind != jObject && ap.kind != jBool {
		return "", &SchemaError{Path: path, Keyword: "additionalProperties", Msg: "must be a boolean or a schema"}
	}
	if t.opt.Strict && extra {
		return "", &SchemaError{Path: path, Keyword: "additionalProperties", Msg: "must be false in strict mode"}
	}
	if props == nil && ap == nil && !t.opt.Strict {
		return t.prim("object"), nil
	}
	ws := t.prim("ws")
	var req, opt []string // key-value expressions
	var names []string    // property names
	if props != nil {
		names = props.keys
		for i, k := range props.keys {
			sub := hint + "-" + ruleHint(k)
			v, err := t.visit(props.vals[i], path+"/properties/"+pointerEscape(k), sub)
			if err != nil {
				return "", err
			}
			kv, err := t.add(sub+"-kv", literal(jsonString(k))+" "+ws+` ":" `+ws+" "+v+" "+ws)
			if err != nil {
				return "", err
			}
			if required[k] {
				req = append(req, kv)
			} else {
				opt = append(opt, kv)
			}
		}
	}
	extraKV := ""
	if extra {
		v := t.prim("value")
		if ap.kind == jObject {
			var err error
			if v, err = t.visit(ap, path+"/additionalProperties", hint+"-extra"); err != nil {
				return "", err
			}
		}
		key := t.prim("string")
		if len(names) > 0 {
			if other, ok := t.otherKey(names); ok {
				var err error
				if key, err = t.add(hint+"-extra-key", other); err != nil {
					return "", err
				}
			}
		}
		var err error
		if extraKV, err = t.add(hint+"-extra-kv", key+" "+ws+` ":" `+ws+" "+v+" "+ws); err != nil {
			return "", err
		}
	}
	// after(i): what may follow once something is written, from optional i.
	after := make([]string, len(opt)+1)
	tail := ""
	if extra {
		tail = `( "," ` + ws + " " + extraKV + " )*"
	}
	after[len(opt)] = tail
	for i := len(opt) - 1; i >= 0; i-- {
		after[i] = strings.TrimSpace(`( "," ` + ws + " " + opt[i] + " )? " + after[i+1])
	}
	var body string
	if len(req) > 0 {
		body = strings.Join(req, ` "," `+ws+" ") + " " + after[0]
	} else {
		// first(i): nothing written yet, optional i or a later one first.
		first := ""
		if extra {
			first = "( " + extraKV + " " + tail + " )?"
		}
		for i := len(opt) - 1; i >= 0; i-- {
			alt := opt[i] + " " + after[i+1]
			if first != "" {
				name, err := t.add(fmt.Sprintf("%s-from-%d", hint, i+1), first)
				if err != nil {
					return "", err
				}
				first = "( " + alt + " | " + name + " )"
				continue
			}
			first = "( " + alt + " )?"
		}
		body = first
	}
	return t.add(hint, strings.TrimSpace(`"{" `+ws+" "+body)+` "}"`)
}

// pointerEscape escapes a key for a JSON pointer in error messages.
func pointerEscape(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}
