package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"llmserve/decode"
	"llmserve/grammar"
)

// constraint is the language a request's output must belong to: a GBNF
// text (start rule "root") and the field that asked for it, for errors.
type constraint struct {
	param string
	gbnf  string
}

// maxGrammarBytes bounds the text of a grammar a request sends.
const maxGrammarBytes = 256 << 10

// constraintOf reads grammar, json_schema and response_format (at most
// one of them may constrain the output) into a grammar; nil when none
// does. A schema is translated here, so that an unsupported keyword is a
// 400 naming the field and the keyword.
func (g *genParams) constraintOf() (*constraint, error) {
	var found []*constraint
	if present(g.Grammar) {
		var src string
		if err := json.Unmarshal(g.Grammar, &src); err != nil {
			return nil, invalid("grammar", "grammar must be a string of GBNF rules")
		}
		if len(src) > maxGrammarBytes {
			return nil, invalid("grammar", "grammar is %d bytes; at most %d are allowed", len(src), maxGrammarBytes)
		}
		if len(bytes.TrimSpace([]byte(src))) > 0 {
			found = append(found, &constraint{param: "grammar", gbnf: src})
		}
	}
	if present(g.JSONSchema) && !isEmptyObject(g.JSONSchema) { // {}: llama-server's default, no constraint
		c, err := schemaConstraint("json_schema", g.JSONSchema, false)
		if err != nil {
			return nil, err
		}
		found = append(found, c)
	}
	if present(g.ResponseFormat) {
		c, err := responseFormat(g.ResponseFormat)
		if err != nil {
			return nil, err
		}
		if c != nil {
			found = append(found, c)
		}
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		return found[0], nil
	}
	return nil, invalid(found[1].param, "%s and %s both constrain the output: send only one", found[0].param, found[1].param)
}

// responseFormat reads OpenAI's response_format: {"type":"text"} (no
// constraint), {"type":"json_object"} (any object, or llama-server's
// "schema" beside it) or {"type":"json_schema","json_schema":{"name",
// "schema","strict"}}.
func responseFormat(raw json.RawMessage) (*constraint, error) {
	const param = "response_format"
	var f struct {
		Type       string          `json:"type"`
		Schema     json.RawMessage `json:"schema"`
		JSONSchema *struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
			Strict *bool           `json:"strict"`
		} `json:"json_schema"`
	}
	if json.Unmarshal(raw, &f) != nil {
		return nil, invalid(param, `response_format must be an object such as {"type":"json_object"}`)
	}
	switch f.Type {
	case "text":
		return nil, nil
	case "json_object":
		if present(f.Schema) {
			return schemaConstraint(param+".schema", f.Schema, false)
		}
		return &constraint{param: param, gbnf: grammar.JSONObjectGBNF}, nil
	case "json_schema":
		if f.JSONSchema == nil {
			if present(f.Schema) { // llama-server's shorter form
				return schemaConstraint(param+".schema", f.Schema, false)
			}
			return nil, invalid(param+".json_schema", `response_format of type "json_schema" needs "json_schema": {"name": ..., "schema": {...}}`)
		}
		js := f.JSONSchema
		if !present(js.Schema) {
			return &constraint{param: param, gbnf: grammar.JSONObjectGBNF}, nil
		}
		return schemaConstraint(param+".json_schema.schema", js.Schema, js.Strict != nil && *js.Strict)
	case "":
		return nil, invalid(param+".type", `response_format.type is required: "text", "json_object" or "json_schema"`)
	}
	return nil, invalid(param+".type", `response_format.type must be "text", "json_object" or "json_schema", not %q`, f.Type)
}

// schemaConstraint translates the JSON schema at param.
func schemaConstraint(param string, schema json.RawMessage, strict bool) (*constraint, error) {
	if s := bytes.TrimSpace(schema); len(s) == 0 || s[0] != '{' {
		return nil, invalid(param, "%s must be a JSON schema object", param)
	}
	if len(schema) > maxGrammarBytes {
		return nil, invalid(param, "%s is %d bytes; at most %d are allowed", param, len(schema), maxGrammarBytes)
	}
	src, err := grammar.SchemaGBNF(schema, grammar.SchemaOptions{Strict: strict})
	if err != nil {
		return nil, schemaError(param, err)
	}
	return &constraint{param: param, gbnf: src}, nil
}

// schemaError is the 400 of a schema that cannot be translated; it names
// the keyword and where it is.
func schemaError(param string, err error) error {
	var se *grammar.SchemaError
	if errors.As(err, &se) && se.Keyword != "" {
		return invalid(param, "%s: unsupported schema keyword %q at %s: %s", param, se.Keyword, se.Path, se.Msg)
	}
	return invalid(param, "%s: %s", param, grammarMessage(err))
}

// grammarMessage is the grammar package's message without its own
// "grammar: " prefix, which the field name replaces.
func grammarMessage(err error) string {
	return strings.TrimPrefix(err.Error(), "grammar: ")
}

// compileError is the 400 of a grammar that does not compile: the field
// and the grammar's own message (with line and column for GBNF).
func compileError(c *constraint, err error) error {
	return invalid(c.param, "%s: %s", c.param, grammarMessage(err))
}

// errIgnoreEOSConstrained refuses ignore_eos with a constraint: the end of
// the grammar allows nothing but the end token.
func errIgnoreEOSConstrained(c *constraint) error {
	return invalid("ignore_eos", "ignore_eos cannot be combined with %s: the output ends where the grammar does", c.param)
}

// isEmptyObject reports whether raw is {}.
func isEmptyObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && len(m) == 0
}

// constrain compiles c (nil: no constraint) for m, through the cache.
func (s *Server) constrain(m *Model, c *constraint, r decode.Request) (*grammar.Engine, error) {
	if c == nil {
		return nil, nil
	}
	if r.IgnoreEOS {
		return nil, errIgnoreEOSConstrained(c)
	}
	return s.grammar.engine(m, c)
}
