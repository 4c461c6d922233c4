package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// SchemaOptions changes how a JSON schema is translated.
type SchemaOptions struct {
	// Strict follows OpenAI's strict structured outputs: objects admit
	// no properties beyond those listed (additionalProperties true or a
	// schema is refused), where otherwise llama.cpp's rules apply (extra
	// properties only where additionalProperties allows them, any object
	// for an object schema without properties).
	Strict bool
}

// SchemaError says which part of a schema cannot be translated.
type SchemaError struct {
	Path    string // JSON pointer of the schema at fault, "#" for the root
	Keyword string // the keyword at fault, when one is
	Msg     string
}

func (e *SchemaError) Error() string {
	if e.Keyword != "" {
		return fmt.Sprintf("json schema: %s: keyword %q: %s", e.Path, e.Keyword, e.Msg)
	}
	return fmt.Sprintf("json schema: %s: %s", e.Path, e.Msg)
}

// maxSchemaGrammar bounds the text of a grammar made from a schema.
const maxSchemaGrammar = 1 << 20

// knownKeywords are the keywords translated, or ignored as annotations.
var knownKeywords = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true,
	"items": true, "minItems": true, "maxItems": true, "enum": true, "const": true,
	"anyOf": true, "oneOf": true, "$ref": true, "$defs": true, "definitions": true,
	"format": true, "minLength": true, "maxLength": true,
	// Annotations: they constrain nothing.
	"title": true, "description": true, "default": true, "examples": true, "$schema": true,
	"$id": true, "$comment": true, "deprecated": true, "readOnly": true, "writeOnly": true,
}

// SchemaGBNF translates a JSON schema into a GBNF grammar whose root is a
// JSON value the schema accepts.
func SchemaGBNF(schema []byte, opt SchemaOptions) (string, error) {
	doc, err := parseJSON(schema)
	if err != nil {
		return "", err
	}
	t := &translator{opt: opt, doc: doc, rules: map[string]string{}, refs: map[string]string{}}
	root, err := t.visit(doc, "#", "root")
	if err != nil {
		return "", err
	}
	if root != "root" {
		if _, taken := t.rules["root"]; taken {
			return "", &SchemaError{Path: "#", Msg: "internal: the root rule's name is taken"}
		}
		t.rules["root"] = root
		t.order = append(t.order, "root")
	}
	var b strings.Builder
	for _, name := range t.order {
		fmt.Fprintf(&b, "%s ::= %s\n", name, t.rules[name])
	}
	if b.Len() > maxSchemaGrammar {
		return "", &SchemaError{Path: "#", Msg: fmt.Sprintf("the grammar would exceed %d bytes", maxSchemaGrammar)}
	}
	return b.String(), nil
}

// CompileSchema translates a JSON schema and compiles the grammar.
func CompileSchema(schema []byte, opt SchemaOptions) (*Grammar, error) {
	src, err := SchemaGBNF(schema, opt)
	if err != nil {
		return nil, err
	}
	g, err := Parse(src)
	if err != nil {
		return nil, fmt.Errorf("json schema: the translated grammar: %w", err)
	}
	return g, nil
}

// translator turns one schema document into rules.
type translator struct {
	opt   SchemaOptions
	doc   *jvalue
	rules map[string]string // rule name -> body
	order []string          // rule names in the order they were added
	refs  map[string]string // $ref -> rule name
	size  int               // bytes of rule bodies so far
}

// add adds a rule with a name made unique from hint, and returns the name.
func (t *translator) add(hint, body string) (string, error) {
	name := hint
	for i := 1; ; i++ {
		if _, taken := t.rules[name]; !taken {
			break
		}
		name = fmt.Sprintf("%s-%d", hint, i)
	}
	if t.size += len(name) + len(body); t.size > maxSchemaGrammar {
		return "", &SchemaError{Path: "#", Msg: fmt.Sprintf("the grammar would exceed %d bytes", maxSchemaGrammar)}
	}
	t.rules[name] = body
	t.order = append(t.order, name)
	return name, nil
}

// prim adds a building block of jsonRules and what it needs, once.
func (t *translator) prim(name string) string {
	if _, ok := t.rules[name]; ok {
		return name
	}
	r := jsonRules[name]
	t.rules[name] = r.body
	t.order = append(t.order, name)
	for _, d := range r.deps {
		t.prim(d)
	}
	return name
}

// ruleHint makes a rule-name hint from a property name.
func ruleHint(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range s {
		if r < 128 && isWordChar(byte(r)) && r != '_' && r != '-' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		} else {
			dash = true
		}
		if b.Len() >= 24 {
			break
		}
	}
	if b.Len() == 0 {
		return "p"
	}
	return b.String()
}

// literal writes s as a GBNF string literal.
func literal(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// jsonText encodes v as compact JSON without HTML escapes: the text a
// model writes for a constant.
func jsonText(v *jvalue) string {
	var b bytes.Buffer
	v.compact(&b)
	return b.String()
}

// jsonString encodes s as a JSON string without HTML escapes.
func jsonString(s string) string {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	_ = e.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// visit returns a GBNF expression for the values schema s accepts; path
// names s for errors and hint names its rule.
func (t *translator) visit(s *jvalue, path, hint string) (string, error) {
	switch s.kind {
	case jBool:
		if s.b {
			return t.prim("value"), nil
		}
		return "", &SchemaError{Path: path, Msg: "schema false accepts no value"}
	case jObject:
	default:
		return "", &SchemaError{Path: path, Msg: "a schema must be an object or a boolean"}
	}
	for _, k := range s.keys {
		if !knownKeywords[k] {
			return "", &SchemaError{Path: path, Keyword: k, Msg: "not supported"}
		}
	}
	if ref := s.get("$ref"); ref != nil {
		return t.ref(ref, path)
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if alts := s.get(kw); alts != nil {
			if alts.kind != jArray || len(alts.arr) == 0 {
				return "", &SchemaError{Path: path, Keyword: kw, Msg: "must be a non-empty array of schemas"}
			}
			var exprs []string
			for i, a := range alts.arr {
				x, err := t.visit(a, fmt.Sprintf("%s/%s/%d", path, kw, i), fmt.Sprintf("%s-%d", hint, i))
				if err != nil {
					return "", err
				}
				exprs = append(exprs, x)
			}
			return t.add(hint, strings.Join(exprs, " | "))
		}
	}
	if c := s.get("const"); c != nil {
		return t.add(hint, literal(jsonText(c)))
	}
	if e := s.get("enum"); e != nil {
		if e.kind != jArray || len(e.arr) == 0 {
			return "", &SchemaError{Path: path, Keyword: "enum", Msg: "must be a non-empty array"}
		}
		var lits []string
		for _, v := range e.arr {
			lits = append(lits, literal(jsonText(v)))
		}
		return t.add(hint, strings.Join(lits, " | "))
	}
	typ := s.get("type")
	switch {
	case typ == nil:
		switch {
		case s.get("properties") != nil || s.get("additionalProperties") != nil:
			return t.object(s, path, hint)
		case s.get("items") != nil || s.get("minItems") != nil || s.get("maxItems") != nil:
			return t.array(s, path, hint)
		case s.get("format") != nil || s.get("minLength") != nil || s.get("maxLength") != nil:
			return t.str(s, path, hint)
		}
		return t.prim("value"), nil
	case typ.kind == jString:
		return t.typed(s, typ.s, path, hint)
	case typ.kind == jArray && len(typ.arr) > 0:
		var exprs []string
		for _, x := range typ.arr {
			if x.kind != jString {
				return "", &SchemaError{Path: path, Keyword: "type", Msg: "must be a type name or an array of them"}
			}
			e, err := t.typed(s, x.s, path, hint+"-"+ruleHint(x.s))
			if err != nil {
				return "", err
			}
			exprs = append(exprs, e)
		}
		return t.add(hint, strings.Join(exprs, " | "))
	}
	return "", &SchemaError{Path: path, Keyword: "type", Msg: "must be a type name or a non-empty array of them"}
}

// typed returns the expression of s read as a schema of type typ.
func (t *translator) typed(s *jvalue, typ, path, hint string) (string, error) {
	switch typ {
	case "object":
		return t.object(s, path, hint)
	case "array":
		return t.array(s, path, hint)
	case "string":
		return t.str(s, path, hint)
	case "number", "integer", "boolean", "null":
		return t.prim(typ), nil
	}
	return "", &SchemaError{Path: path, Keyword: "type", Msg: fmt.Sprintf("unknown type %q", typ)}
}

// ref returns the rule of a "#/$defs/..." or "#/definitions/..." reference,
// translating its target once (so recursive schemas work).
func (t *translator) ref(ref *jvalue, path string) (string, error) {
	if ref.kind != jString {
		return "", &SchemaError{Path: path, Keyword: "$ref", Msg: "must be a string"}
	}
	if name, ok := t.refs[ref.s]; ok {
		return name, nil
	}
	target := t.doc
	if ref.s != "#" {
		parts := strings.Split(strings.TrimPrefix(ref.s, "#/"), "/")
		if !strings.HasPrefix(ref.s, "#/") || len(parts) != 2 || (parts[0] != "$defs" && parts[0] != "definitions") {
			return "", &SchemaError{Path: path, Keyword: "$ref", Msg: fmt.Sprintf("%q: only references to #/$defs/<name> or #/definitions/<name> are supported", ref.s)}
		}
		name := strings.ReplaceAll(strings.ReplaceAll(parts[1], "~1", "/"), "~0", "~")
		if target = t.doc.get(parts[0]).get(name); target == nil {
			return "", &SchemaError{Path: path, Keyword: "$ref", Msg: fmt.Sprintf("%q names no definition", ref.s)}
		}
	}
	// Reserve the rule first: the target may refer to itself.
	name, err := t.add("ref-"+ruleHint(ref.s[1:]), "")
	if err != nil {
		return "", err
	}
	t.refs[ref.s] = name
	body, err := t.visit(target, ref.s, name+"-body")
	if err != nil {
		return "", err
	}
	t.rules[name] = body
	return name, nil
}
