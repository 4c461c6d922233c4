package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// jkind is the type of a jvalue.
type jkind uint8

const (
	jNull jkind = iota
	jBool
	jNumber
	jString
	jArray
	jObject
)

// jvalue is a JSON value that keeps its object keys in document order
// (a schema's properties are generated in the order they are written).
type jvalue struct {
	kind jkind
	b    bool
	s    string    // a string, or a number's literal
	arr  []*jvalue // array elements
	keys []string  // object keys, in order
	vals []*jvalue // object values, beside keys
}

// get returns the value of key in an object, or nil.
func (v *jvalue) get(key string) *jvalue {
	if v == nil || v.kind != jObject {
		return nil
	}
	for i, k := range v.keys {
		if k == key {
			return v.vals[i]
		}
	}
	return nil
}

// maxSchemaDepth bounds the nesting of a schema document.
const maxSchemaDepth = 128

// parseJSON reads one JSON document.
func parseJSON(data []byte) (*jvalue, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	v, err := readJSON(d, 0)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("json schema: data after the schema")
	}
	return v, nil
}

func readJSON(d *json.Decoder, depth int) (*jvalue, error) {
	if depth > maxSchemaDepth {
		return nil, fmt.Errorf("json schema: nested deeper than %d", maxSchemaDepth)
	}
	t, err := d.Token()
	if err != nil {
		return nil, fmt.Errorf("json schema: %w", err)
	}
	switch t := t.(type) {
	case nil:
		return &jvalue{kind: jNull}, nil
	case bool:
		return &jvalue{kind: jBool, b: t}, nil
	case json.Number:
		return &jvalue{kind: jNumber, s: t.String()}, nil
	case string:
		return &jvalue{kind: jString, s: t}, nil
	case json.Delim:
		v := &jvalue{kind: jArray}
		if t == '{' {
			v.kind = jObject
		}
		for d.More() {
			if v.kind == jObject {
				k, err := d.Token()
				if err != nil {
					return nil, fmt.Errorf("json schema: %w", err)
				}
				v.keys = append(v.keys, k.(string))
			}
			x, err := readJSON(d, depth+1)
			if err != nil {
				return nil, err
			}
			if v.kind == jObject {
				v.vals = append(v.vals, x)
			} else {
				v.arr = append(v.arr, x)
			}
		}
		if _, err := d.Token(); err != nil { // the closing delimiter
			return nil, fmt.Errorf("json schema: %w", err)
		}
		return v, nil
	}
	return nil, fmt.Errorf("json schema: unexpected token %v", t)
}

// compact writes v as compact JSON, as a model should write a constant.
func (v *jvalue) compact(out *bytes.Buffer) {
	switch v.kind {
	case jNull:
		out.WriteString("null")
	case jBool:
		fmt.Fprint(out, v.b)
	case jNumber:
		out.WriteString(v.s)
	case jString:
		out.WriteString(jsonString(v.s))
	case jArray:
		out.WriteByte('[')
		for i, x := range v.arr {
			if i > 0 {
				out.WriteByte(',')
			}
			x.compact(out)
		}
		out.WriteByte(']')
	case jObject:
		out.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				out.WriteByte(',')
			}
			out.WriteString(jsonString(k))
			out.WriteByte(':')
			v.vals[i].compact(out)
		}
		out.WriteByte('}')
	}
}
