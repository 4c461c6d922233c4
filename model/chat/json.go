package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/ardanlabs/jinja"
)

// jsonValue decodes one JSON value into a template value, keeping the key
// order of objects (tojson then writes them back in the order the client
// sent, as Python's json.dumps does) and integers as integers.
func jsonValue(raw []byte) (jinja.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeJSON(dec, 0)
	if err != nil {
		return jinja.Undefined(), fmt.Errorf("json: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return jinja.Undefined(), errors.New("json: data after the value")
	}
	return v, nil
}

// maxJSONDepth bounds the nesting of arrays and objects jsonValue takes,
// which bounds its recursion and that of templates walking the value.
const maxJSONDepth = 200

func decodeJSON(dec *json.Decoder, depth int) (jinja.Value, error) {
	tok, err := dec.Token()
	if err != nil {
		return jinja.Undefined(), err
	}
	switch tok := tok.(type) {
	case json.Delim:
		if depth >= maxJSONDepth {
			return jinja.Undefined(), fmt.Errorf("nested deeper than %d levels", maxJSONDepth)
		}
		switch tok {
		case '[':
			var items []jinja.Value
			for dec.More() {
				v, err := decodeJSON(dec, depth+1)
				if err != nil {
					return jinja.Undefined(), err
				}
				items = append(items, v)
			}
			_, err := dec.Token() // ']'
			return jinja.NewList(items), err
		case '{':
			d := jinja.NewDict()
			for dec.More() {
				key, err := dec.Token()
				if err != nil {
					return jinja.Undefined(), err
				}
				v, err := decodeJSON(dec, depth+1)
				if err != nil {
					return jinja.Undefined(), err
				}
				d.AsDict().Set(key.(string), v)
			}
			_, err := dec.Token() // '}'
			return d, err
		}
		return jinja.Undefined(), fmt.Errorf("unexpected %v", tok)
	default:
		// nil, bool, string and json.Number convert directly.
		return jinja.FromGoValue(tok), nil
	}
}
