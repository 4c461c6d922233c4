package grammar

import (
	"errors"
	"strings"
	"testing"
)

// TestSchemaKeywords translates a schema per keyword and checks texts
// that must and must not match.
func TestSchemaKeywords(t *testing.T) {
	v := byteVocab(t)
	cases := []struct {
		name, schema string
		strict       bool
		good, bad    []string
	}{
		{"string", `{"type":"string"}`, false, []string{`""`, `"a\"b"`, `"é\u00e9"`}, []string{`"a`, `a`, "\"\n\"", `1`}},
		{"number", `{"type":"number"}`, false, []string{`0`, `-1.5`, `2e10`, `3.25E-2`}, []string{`01`, `1.`, `.5`, `"1"`, `+1`}},
		{"integer", `{"type":"integer"}`, false, []string{`0`, `-12`, `123456`}, []string{`1.5`, `01`, `-`, `1e3`}},
		{"boolean", `{"type":"boolean"}`, false, []string{`true`, `false`}, []string{`True`, `1`, `null`}},
		{"null", `{"type":"null"}`, false, []string{`null`}, []string{`nil`, `0`}},
		{"type list", `{"type":["string","null"]}`, false, []string{`"x"`, `null`}, []string{`1`}},
		{"any", `{}`, false, []string{`1`, `"x"`, `{"a":[null]}`, `[]`}, []string{`{`, `nope`}},
		{"properties required", `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a","b"]}`, false,
			[]string{`{"a":1,"b":"x"}`, `{ "a": 1, "b": "x" }`, "{\n  \"a\": 1,\n  \"b\": \"x\"\n}"},
			[]string{`{"a":1}`, `{"b":"x","a":1}`, `{"a":1,"b":"x","c":2}`, `{"a":"1","b":"x"}`, `{}`}},
		{"optional in order", `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"},"c":{"type":"integer"}},"required":["b"]}`, false,
			[]string{`{"b":1}`, `{"b":1,"a":2}`, `{"b":1,"c":3}`, `{"b":1,"a":2,"c":3}`},
			[]string{`{}`, `{"a":2,"b":1}`, `{"b":1,"c":3,"a":2}`, `{"b":1,}`}},
		{"all optional", `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}}}`, false,
			[]string{`{}`, `{"a":1}`, `{"b":2}`, `{"a":1,"b":2}`},
			[]string{`{"b":2,"a":1}`, `{,"b":2}`, `{"c":1}`}},
		{"additional properties schema", `{"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":{"type":"boolean"}}`, false,
			[]string{`{}`, `{"a":1}`, `{"a":1,"x":true}`, `{"x":true,"y":false}`, `{"ab":true}`, `{"":true}`, `{"\u0061b":true}`},
			[]string{`{"x":1}`, `{"a":1,"x":"s"}`, `{"a":true}`, `{"a":1,"a":2}`}},
		{"additional properties false", `{"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":false}`, false,
			[]string{`{}`, `{"a":1}`}, []string{`{"a":1,"b":2}`}},
		{"object without properties", `{"type":"object"}`, false,
			[]string{`{}`, `{"k":[1,{"z":null}]}`}, []string{`[]`, `{"k"}`}},
		{"strict object without properties", `{"type":"object"}`, true,
			[]string{`{}`}, []string{`{"k":1}`}},
		{"nested objects", `{"type":"object","properties":{"p":{"type":"object","properties":{"q":{"type":"boolean"}},"required":["q"]}},"required":["p"]}`, false,
			[]string{`{"p":{"q":true}}`}, []string{`{"p":{}}`, `{"p":true}`}},
		{"enum", `{"enum":["red","green",3,null,{"a":"<&>"}]}`, false,
			[]string{`"red"`, `"green"`, `3`, `null`, `{"a":"<&>"}`}, []string{`"blue"`, `"Red"`, `4`, `{"a":"\u003c&>"}`}},
		{"const", `{"const":"tool"}`, false, []string{`"tool"`}, []string{`"tools"`, `tool`}},
		{"array items", `{"type":"array","items":{"type":"integer"}}`, false,
			[]string{`[]`, `[1]`, `[1, 2,3]`}, []string{`[1,]`, `["a"]`, `[`}},
		{"min and max items", `{"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":3}`, false,
			[]string{`[1,2]`, `[1,2,3]`}, []string{`[]`, `[1]`, `[1,2,3,4]`}},
		{"min items only", `{"type":"array","minItems":1}`, false,
			[]string{`[1]`, `["a",{}]`}, []string{`[]`}},
		{"max items zero", `{"type":"array","maxItems":0}`, false, []string{`[]`}, []string{`[1]`}},
		{"anyOf", `{"anyOf":[{"type":"integer"},{"type":"array","items":{"type":"string"}}]}`, false,
			[]string{`1`, `["a"]`}, []string{`"a"`, `[1]`}},
		{"oneOf", `{"oneOf":[{"const":1},{"const":"one"}]}`, false, []string{`1`, `"one"`}, []string{`2`}},
		{"ref to $defs", `{"type":"object","properties":{"p":{"$ref":"#/$defs/pt"}},"required":["p"],"$defs":{"pt":{"type":"array","items":{"type":"number"},"minItems":2,"maxItems":2}}}`, false,
			[]string{`{"p":[1,2.5]}`}, []string{`{"p":[1]}`}},
		{"ref to definitions", `{"$ref":"#/definitions/b","definitions":{"b":{"type":"boolean"}}}`, false, []string{`true`}, []string{`1`}},
		{"recursive ref", `{"$ref":"#/$defs/node","$defs":{"node":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["kids"]}}}`, false,
			[]string{`{"kids":[]}`, `{"kids":[{"kids":[]},{"kids":[{"kids":[]}]}]}`}, []string{`{"kids":[{}]}`}},
		{"format date", `{"type":"string","format":"date"}`, false, []string{`"2024-02-29"`}, []string{`"2024-13-01"`, `"2024-1-01"`, `"24-01-01"`}},
		{"format time", `{"type":"string","format":"time"}`, false, []string{`"23:59:59Z"`, `"08:30:00.123+02:00"`}, []string{`"24:00:00Z"`, `"08:30:00"`}},
		{"format date-time", `{"type":"string","format":"date-time"}`, false, []string{`"2024-06-01T12:00:00Z"`}, []string{`"2024-06-01 12:00:00Z"`}},
		{"format uuid", `{"type":"string","format":"uuid"}`, false, []string{`"123e4567-e89b-12d3-a456-426614174000"`}, []string{`"123e4567e89b12d3a456426614174000"`}},
		{"min and max length", `{"type":"string","minLength":2,"maxLength":3}`, false, []string{`"ab"`, `"abc"`, `"\n\t"`, `"éé"`}, []string{`""`, `"a"`, `"abcd"`}},
		{"annotations ignored", `{"type":"integer","title":"n","description":"a count","default":1,"examples":[2],"$schema":"x"}`, false, []string{`5`}, []string{`"5"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src, err := SchemaGBNF([]byte(c.schema), SchemaOptions{Strict: c.strict})
			if err != nil {
				t.Fatal(err)
			}
			e := mustEngine(t, src, v)
			for _, s := range c.good {
				if !matches(t, e, s) {
					t.Errorf("%s should match\n%s", s, src)
				}
			}
			for _, s := range c.bad {
				if matches(t, e, s) {
					t.Errorf("%s should not match\n%s", s, src)
				}
			}
		})
	}
}

// TestSchemaErrors checks that what cannot be translated is refused with
// the keyword at fault named.
func TestSchemaErrors(t *testing.T) {
	cases := []struct {
		schema  string
		strict  bool
		keyword string // "" for errors that name none
	}{
		{`{"type":"string","pattern":"^a+$"}`, false, "pattern"},
		{`{"type":"integer","minimum":0}`, false, "minimum"},
		{`{"type":"number","multipleOf":2}`, false, "multipleOf"},
		{`{"allOf":[{"type":"string"}]}`, false, "allOf"},
		{`{"not":{"type":"string"}}`, false, "not"},
		{`{"type":"array","prefixItems":[{"type":"string"}]}`, false, "prefixItems"},
		{`{"type":"array","items":[{"type":"string"}]}`, false, "items"},
		{`{"type":"object","properties":{"a":{"type":"string","format":"email"}}}`, false, "format"},
		{`{"type":"object","properties":{"a":{"if":{}}}}`, false, "if"},
		{`{"type":"object","additionalProperties":true}`, true, "additionalProperties"},
		{`{"type":"object","required":["x"]}`, false, "required"},
		{`{"type":"tuple"}`, false, "type"},
		{`{"$ref":"https://example.com/s.json"}`, false, "$ref"},
		{`{"$ref":"#/$defs/missing"}`, false, "$ref"},
		{`{"type":"array","minItems":3,"maxItems":2}`, false, "maxItems"},
		{`{"type":"string","maxLength":-1}`, false, "maxLength"},
		{`{"type":"string","minLength":1.5}`, false, "minLength"},
		{`{"enum":[]}`, false, "enum"},
		{`false`, false, ""},
		{`[1]`, false, ""},
	}
	for _, c := range cases {
		_, err := SchemaGBNF([]byte(c.schema), SchemaOptions{Strict: c.strict})
		var se *SchemaError
		switch {
		case err == nil:
			t.Errorf("%s: translated, want an error", c.schema)
		case !errors.As(err, &se):
			t.Errorf("%s: error %v is not a *SchemaError", c.schema, err)
		case se.Keyword != c.keyword:
			t.Errorf("%s: error %v names keyword %q, want %q", c.schema, err, se.Keyword, c.keyword)
		}
	}
	for _, bad := range []string{``, `{`, `{"type":"string"} x`} {
		if _, err := SchemaGBNF([]byte(bad), SchemaOptions{}); err == nil {
			t.Errorf("%q: malformed JSON translated", bad)
		}
	}
}

// TestJSONObjectGrammar checks the json_object grammar: any object, and
// nothing else.
func TestJSONObjectGrammar(t *testing.T) {
	e := mustEngine(t, JSONObjectGBNF, byteVocab(t))
	for _, s := range []string{`{}`, `{"a":[1,{"b":null}],"c":"d"}`, "{\n \"x\": -0.5e3\n}"} {
		if !matches(t, e, s) {
			t.Errorf("%s should match", s)
		}
	}
	for _, s := range []string{`[]`, `"x"`, `1`, `{"a"}`, `{} `} {
		if matches(t, e, s) {
			t.Errorf("%s should not match", s)
		}
	}
}

// FuzzSchemaGBNF checks that any schema text is either refused with an
// error or translated into a grammar that compiles.
func FuzzSchemaGBNF(f *testing.F) {
	schema, _ := benchSchema()
	for _, s := range []string{schema, `{"type":"string","minLength":2}`, `{"$ref":"#/$defs/a","$defs":{"a":{"type":"array","items":{"$ref":"#/$defs/a"}}}}`,
		`{"type":"object","properties":{"a\"b":{"const":"\u0000"}},"additionalProperties":{"enum":[1,"x"]}}`, `{"anyOf":[{"type":["null","boolean"]},{"format":"uuid"}]}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, schema string) {
		src, err := SchemaGBNF([]byte(schema), SchemaOptions{})
		if err != nil {
			return
		}
		if _, err := Parse(src); err != nil && !strings.Contains(err.Error(), "left-recursive") {
			t.Fatalf("schema %q translated into a grammar that does not compile: %v\n%s", schema, err, src)
		}
	})
}
