package httpapi

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// checkUTF8 refuses a body that is not UTF-8, naming the JSON member that
// holds the first bad byte ("messages[1].content") as the parameter.
func checkUTF8(body []byte) error {
	if utf8.Valid(body) {
		return nil
	}
	off := 0
	for off < len(body) {
		r, size := utf8.DecodeRune(body[off:])
		if r == utf8.RuneError && size <= 1 {
			break
		}
		off += size
	}
	param := jsonPathAt(body, off)
	name := param
	if name == "" {
		name = "the request body"
	}
	e := invalid(param, "%s is not valid UTF-8 (bad byte at offset %d of the body)", name, off).(*apiError)
	e.Code = "invalid_utf8"
	if param == "" {
		e.Param = nil
	}
	return e
}

// pathFrame is one open object or array on the way to a JSON value.
type pathFrame struct {
	obj     bool   // an object (else an array)
	key     string // the member being read (objects)
	wantKey bool   // the next string is a key (objects)
	idx     int    // the element being read (arrays)
}

// jsonPathAt returns the path of the JSON value or key that spans byte
// off of body ("" for the top level or a body that is not JSON).
func jsonPathAt(body []byte, off int) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	var stack []pathFrame
	done := func() { // a value ended inside the top frame
		if n := len(stack); n > 0 && stack[n-1].obj {
			stack[n-1].wantKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return pathString(stack)
		}
		past := dec.InputOffset() > int64(off)
		n := len(stack)
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			if past || n == 0 {
				return pathString(stack)
			}
			stack = stack[:n-1]
			done()
			continue
		}
		if n > 0 && stack[n-1].obj && stack[n-1].wantKey {
			stack[n-1].key, _ = tok.(string)
			stack[n-1].wantKey = false
			if past {
				return pathString(stack)
			}
			continue
		}
		if n > 0 && !stack[n-1].obj {
			stack[n-1].idx++
		}
		if past {
			return pathString(stack)
		}
		if d, ok := tok.(json.Delim); ok {
			stack = append(stack, pathFrame{obj: d == '{', wantKey: d == '{', idx: -1})
			continue
		}
		done()
	}
}

func pathString(stack []pathFrame) string {
	var b strings.Builder
	for _, f := range stack {
		switch {
		case f.obj && f.key != "":
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(f.key)
		case !f.obj && f.idx >= 0:
			b.WriteString("[" + strconv.Itoa(f.idx) + "]")
		}
	}
	return b.String()
}
