package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"unicode/utf16"
)

// genSchema writes a random schema of the translated subset, at most
// depth levels deep.
func genSchema(r *rand.Rand, depth int) string {
	leaves := []func() string{
		func() string { return `{"type":"string"}` },
		func() string {
			lo := r.IntN(3)
			return fmt.Sprintf(`{"type":"string","minLength":%d,"maxLength":%d}`, lo, lo+r.IntN(4))
		},
		func() string {
			return fmt.Sprintf(`{"type":"string","format":%q}`, []string{"date", "time", "date-time", "uuid"}[r.IntN(4)])
		},
		func() string { return `{"type":"integer"}` },
		func() string { return `{"type":"number"}` },
		func() string { return `{"type":"boolean"}` },
		func() string { return `{"type":"null"}` },
		func() string { return `{"enum":["a","b c","\"q\"",3,null]}` },
		func() string { return `{"const":{"k":[1,"<x>"]}}` },
		func() string { return `{"type":["integer","string"]}` },
	}
	if depth == 0 || r.IntN(3) == 0 {
		return leaves[r.IntN(len(leaves))]()
	}
	switch r.IntN(3) {
	case 0:
		n := 1 + r.IntN(4)
		var props, req []string
		for i := range n {
			props = append(props, fmt.Sprintf(`"k%d":%s`, i, genSchema(r, depth-1)))
			if r.IntN(2) == 0 {
				req = append(req, fmt.Sprintf(`"k%d"`, i))
			}
		}
		extra := []string{``, `,"additionalProperties":false`, `,"additionalProperties":{"type":"integer"}`}[r.IntN(3)]
		return `{"type":"object","properties":{` + strings.Join(props, ",") + `},"required":[` + strings.Join(req, ",") + `]` + extra + `}`
	case 1:
		lo := r.IntN(2)
		return fmt.Sprintf(`{"type":"array","items":%s,"minItems":%d,"maxItems":%d}`, genSchema(r, depth-1), lo, lo+r.IntN(3))
	}
	return `{"anyOf":[` + genSchema(r, depth-1) + `,` + genSchema(r, depth-1) + `]}`
}

var (
	dateRE     = regexp.MustCompile(`^\d{4}-\d\d-\d\d$`)
	timeRE     = regexp.MustCompile(`^\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$`)
	dateTimeRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$`)
	uuidRE     = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
)

// validate checks value against schema, both decoded with UseNumber,
// for the subset genSchema writes. String lengths count UTF-16 units:
// the grammar counts a surrogate pair's two escapes as two characters.
func validate(schema map[string]any, value any) error {
	if alts, ok := schema["anyOf"].([]any); ok {
		for _, a := range alts {
			if validate(a.(map[string]any), value) == nil {
				return nil
			}
		}
		return fmt.Errorf("%v matches no anyOf branch", value)
	}
	if c, ok := schema["const"]; ok {
		return sameJSON(c, value)
	}
	if e, ok := schema["enum"].([]any); ok {
		for _, x := range e {
			if sameJSON(x, value) == nil {
				return nil
			}
		}
		return fmt.Errorf("%v is not in the enum", value)
	}
	if types, ok := schema["type"].([]any); ok {
		for _, ty := range types {
			if validate(map[string]any{"type": ty}, value) == nil {
				return nil
			}
		}
		return fmt.Errorf("%v has none of the types %v", value, types)
	}
	switch schema["type"] {
	case "string":
		s, ok := value.(string)
		if !ok {
			return fmt.Errorf("%v is not a string", value)
		}
		n := len(utf16.Encode([]rune(s)))
		if lo, ok := schema["minLength"].(json.Number); ok && n < atoi(lo) {
			return fmt.Errorf("%q is shorter than %s", s, lo)
		}
		if hi, ok := schema["maxLength"].(json.Number); ok && n > atoi(hi) {
			return fmt.Errorf("%q is longer than %s", s, hi)
		}
		re := map[any]*regexp.Regexp{"date": dateRE, "time": timeRE, "date-time": dateTimeRE, "uuid": uuidRE}[schema["format"]]
		if re != nil && !re.MatchString(s) {
			return fmt.Errorf("%q is not a %v", s, schema["format"])
		}
	case "integer":
		if n, ok := value.(json.Number); !ok || strings.ContainsAny(string(n), ".eE") {
			return fmt.Errorf("%v is not an integer", value)
		}
	case "number":
		if _, ok := value.(json.Number); !ok {
			return fmt.Errorf("%v is not a number", value)
		}
	case "boolean":
		if _, ok := value.(bool); !ok {
			return fmt.Errorf("%v is not a boolean", value)
		}
	case "null":
		if value != nil {
			return fmt.Errorf("%v is not null", value)
		}
	case "array":
		a, ok := value.([]any)
		if !ok {
			return fmt.Errorf("%v is not an array", value)
		}
		if len(a) < atoi(schema["minItems"].(json.Number)) || len(a) > atoi(schema["maxItems"].(json.Number)) {
			return fmt.Errorf("%d items outside [%v, %v]", len(a), schema["minItems"], schema["maxItems"])
		}
		for _, x := range a {
			if err := validate(schema["items"].(map[string]any), x); err != nil {
				return err
			}
		}
	case "object":
		o, ok := value.(map[string]any)
		if !ok {
			return fmt.Errorf("%v is not an object", value)
		}
		props := schema["properties"].(map[string]any)
		for _, k := range schema["required"].([]any) {
			if _, ok := o[k.(string)]; !ok {
				return fmt.Errorf("required %q missing from %v", k, o)
			}
		}
		for k, x := range o {
			sub, ok := props[k].(map[string]any)
			if !ok {
				ap, isSchema := schema["additionalProperties"].(map[string]any)
				if !isSchema {
					return fmt.Errorf("property %q is not allowed", k)
				}
				sub = ap
			}
			if err := validate(sub, x); err != nil {
				return fmt.Errorf("%q: %w", k, err)
			}
		}
	default:
		return fmt.Errorf("validator: schema %v not in the generated subset", schema)
	}
	return nil
}

func atoi(n json.Number) int {
	i, _ := n.Int64()
	return int(i)
}

// sameJSON compares two decoded values by their compact encoding.
func sameJSON(a, b any) error {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	if !bytes.Equal(x, y) {
		return fmt.Errorf("%s is not %s", y, x)
	}
	return nil
}

func decodeNumbers(data string) (any, error) {
	d := json.NewDecoder(strings.NewReader(data))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

// randomText picks random allowed tokens until the grammar ends: only
// the masks make the text valid. It prefers ending when it may and, past
// a budget, short tokens, so that texts stay small.
func randomText(t *testing.T, e *Engine, r *rand.Rand) string {
	t.Helper()
	v := e.Vocab()
	m, err := e.NewMatcher()
	if err != nil {
		t.Fatal(err)
	}
	mask := make([]uint64, v.MaskWords())
	var out []byte
	var allowed []int32
	for step := 0; step < 20000; step++ {
		if err := m.Allowed(mask); err != nil {
			t.Fatalf("step %d after %q: %v", step, out, err)
		}
		allowed = allowed[:0]
		for id := range int32(v.Size()) {
			if mask[id>>6]>>(id&63)&1 != 0 {
				allowed = append(allowed, id)
			}
		}
		tok := allowed[r.IntN(len(allowed))]
		if m.CanEnd() && r.IntN(2) == 0 {
			tok = v.end[0]
		}
		if err := m.Accept(tok); err != nil {
			t.Fatalf("step %d after %q: allowed token %d refused: %v", step, out, tok, err)
		}
		if m.done {
			return string(out)
		}
		out = append(out, v.bytes[tok]...)
	}
	t.Fatalf("no end after 20000 tokens: %q", out)
	return ""
}

// TestRandomSchemas generates 200 schemas and, for each, texts from
// random tokens under the grammar's masks; every text must parse as JSON
// and validate against its schema.
func TestRandomSchemas(t *testing.T) {
	v := byteVocab(t, `{"`, `": `, `", "`, `"}`, `true`, `null`, "\n  ", `12`, `-0.5`, `é`, `😀`, "\xf0\x9f", `\u00`, `[{"k0": `, `"},`, `2024-`)
	checkRandomSchemas(t, v, 200, 3, 7)
}

// TestRandomSchemasRealVocab is TestRandomSchemas on the 128k llama-bpe
// vocabulary, where tokens span many characters and the stack tops'
// tables leave work to the rest of the stack.
func TestRandomSchemasRealVocab(t *testing.T) {
	_, v := realVocab(t, "ggml-vocab-llama-bpe.gguf")
	n := 30
	if testing.Short() {
		n = 5
	}
	checkRandomSchemas(t, v, n, 2, 11)
}

// checkRandomSchemas generates n schemas (stream salt) and, for each,
// seeds texts from random tokens of v under the schema's masks; every text
// must parse as JSON and validate against its schema.
func checkRandomSchemas(t *testing.T, v *Vocab, n int, seeds, salt uint64) {
	t.Helper()
	for i := range n {
		r := rand.New(rand.NewPCG(uint64(i), salt))
		schema := genSchema(r, 3)
		g, err := CompileSchema([]byte(schema), SchemaOptions{})
		if err != nil {
			t.Fatalf("schema %d %s: %v", i, schema, err)
		}
		e, err := NewEngine(g, v)
		if err != nil {
			t.Fatal(err)
		}
		var sch map[string]any
		d := json.NewDecoder(strings.NewReader(schema))
		d.UseNumber()
		if err := d.Decode(&sch); err != nil {
			t.Fatal(err)
		}
		for seed := range seeds {
			text := randomText(t, e, rand.New(rand.NewPCG(seed, uint64(i))))
			val, err := decodeNumbers(text)
			if err != nil {
				t.Fatalf("schema %d %s seed %d: %q is not JSON: %v", i, schema, seed, text, err)
			}
			if err := validate(sch, val); err != nil {
				t.Fatalf("schema %d %s seed %d: %q: %v", i, schema, seed, text, err)
			}
		}
	}
}
