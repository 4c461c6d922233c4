package chat

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
)

// The parent and a worker exchange one JSON value per line: the parent
// sends a hello, the worker answers with a reply (Out "ready"), then each
// request gets one reply.

// hello starts a worker: the template and the bounds it enforces itself.
type hello struct {
	Source    string
	MaxOutput int
	MaxRange  int
	MaxMemory int64
	MaxStack  int
}

// request is one render.
type request struct {
	Messages            []Message
	AddGenerationPrompt bool
	BOSToken, EOSToken  string
	Tools               json.RawMessage            `json:",omitempty"`
	Vars                map[string]json.RawMessage `json:",omitempty"`
	Now                 time.Time
}

// reply is the result of one render.
type reply struct {
	Out string
	Err *RenderError `json:",omitempty"`
}

// newRequest encodes msgs and opts; Options.Now is read once.
func newRequest(msgs []Message, opts Options) (*request, *RenderError) {
	req := &request{Messages: msgs, AddGenerationPrompt: opts.AddGenerationPrompt,
		BOSToken: opts.BOSToken, EOSToken: opts.EOSToken}
	if opts.Tools != nil {
		if !json.Valid(opts.Tools) {
			return nil, failf(ErrInput, "tools: json: not a JSON value")
		}
		req.Tools = opts.Tools
	}
	if len(opts.Vars) > 0 {
		req.Vars = make(map[string]json.RawMessage, len(opts.Vars))
		for k, v := range opts.Vars {
			raw, err := varJSON(nil, v)
			if err != nil {
				return nil, failf(ErrInput, "variable %q: %v", k, err)
			}
			req.Vars[k] = raw
		}
	}
	req.Now = time.Now()
	if opts.Now != nil {
		req.Now = opts.Now()
	}
	return req, nil
}

// options rebuilds the Options of a request.
func (req *request) options() Options {
	o := Options{AddGenerationPrompt: req.AddGenerationPrompt, BOSToken: req.BOSToken, EOSToken: req.EOSToken,
		Tools: req.Tools, Now: func() time.Time { return req.Now }}
	if len(req.Vars) > 0 {
		o.Vars = make(map[string]any, len(req.Vars))
		for k, v := range req.Vars {
			o.Vars[k] = v
		}
	}
	return o
}

// varJSON appends v, an Options.Vars value, as JSON. Whole floats keep a
// ".0" so that the worker sees a float, as the template in process does.
func varJSON(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, fmt.Errorf("%v has no JSON form", v)
		}
		n := len(b)
		b = strconv.AppendFloat(b, v, 'g', -1, 64)
		if !slices.ContainsFunc(b[n:], func(c byte) bool { return c == '.' || c == 'e' }) {
			b = append(b, ".0"...)
		}
		return b, nil
	case string:
		s, _ := json.Marshal(v)
		return append(b, s...), nil
	case json.RawMessage:
		if !json.Valid(v) {
			return nil, fmt.Errorf("invalid JSON")
		}
		return append(b, v...), nil
	case []any:
		b = append(b, '[')
		for i, x := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = varJSON(b, x); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			s, _ := json.Marshal(k)
			b = append(append(b, s...), ':')
			var err error
			if b, err = varJSON(b, v[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	}
	return nil, fmt.Errorf("unsupported type %T", v)
}
