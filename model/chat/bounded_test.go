package chat

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestBoundedRange(t *testing.T) {
	tests := []struct{ src, want string }{
		{"{{ range(5) | list }}", "[0, 1, 2, 3, 4]"},
		{"{{ range(2, 5) | list }}", "[2, 3, 4]"},
		{"{{ range(10, 0, -3) | list }}", "[10, 7, 4, 1]"},
		{"{{ range(0, 10, 4) | list }}", "[0, 4, 8]"},
		{"{{ range(5, 1) | list }}", "[]"},
		{"{{ range(-3) | list }}", "[]"},
		{"{% for i in range(3) %}{{ loop.index }}{% endfor %}", "123"},
	}
	for _, tc := range tests {
		if got := render(t, tc.src, nil, Options{}); got != tc.want {
			t.Errorf("%s = %q, want %q", tc.src, got, tc.want)
		}
	}
}

// Template.Render, in process, keeps the range and output bounds and
// classifies failures like a Renderer.
func TestTemplateRenderKinds(t *testing.T) {
	tests := []struct {
		name, src string
		kind      ErrorKind
		bound     string
	}{
		{"range", "{% for i in range(1000000000) %}{% endfor %}", ErrLimit, BoundRange},
		{"ranges add up", "{% for i in range(400) %}{% for j in range(400) %}{% endfor %}{% endfor %}", ErrLimit, BoundRange},
		{"output", "{{ 'x' * 5000000 }}", ErrLimit, BoundOutput},
		{"step zero", "{{ range(1, 5, 0) }}", ErrTemplate, ""},
		{"float argument", "{{ range(2.5) }}", ErrTemplate, ""},
		{"four arguments", "{{ range(1, 2, 3, 4) }}", ErrTemplate, ""},
		{"raise_exception", "{{ raise_exception('bad roles') }}", ErrRejected, ""},
		{"undefined call", "{{ nosuch() }}", ErrTemplate, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := New(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			_, err = tmpl.Render(nil, Options{})
			var re *RenderError
			if !errors.As(err, &re) || re.Kind != tc.kind || re.Bound != tc.bound {
				t.Fatalf("error = %v, want kind %v bound %q", err, tc.kind, tc.bound)
			}
		})
	}
}

func TestRangeLen(t *testing.T) {
	const maxI, minI = int64(^uint64(0) >> 1), -int64(^uint64(0)>>1) - 1
	tests := []struct {
		start, stop, step int64
		want              uint64
	}{
		{0, 5, 1, 5}, {0, 5, 2, 3}, {5, 0, -1, 5}, {5, 0, -2, 3}, {0, 0, 1, 0}, {3, 1, 1, 0},
		{minI, maxI, 1, ^uint64(0)}, {maxI, minI, -1, ^uint64(0)}, {minI, maxI, maxI, 3}, {0, 1, minI, 0},
	}
	for _, tc := range tests {
		if got := rangeLen(tc.start, tc.stop, tc.step); got != tc.want {
			t.Errorf("rangeLen(%d, %d, %d) = %d, want %d", tc.start, tc.stop, tc.step, got, tc.want)
		}
	}
}

// Deeply nested JSON from a client is refused before a template walks it.
func TestDeepJSONRefused(t *testing.T) {
	deep := strings.Repeat("[", 5000) + strings.Repeat("]", 5000)
	tmpl, err := New("{{ tools | tojson }}")
	if err != nil {
		t.Fatal(err)
	}
	for _, opts := range []Options{
		{Tools: json.RawMessage(deep)},
		{Vars: map[string]any{"x": json.RawMessage(deep)}},
	} {
		_, err := tmpl.Render(nil, opts)
		var re *RenderError
		if !errors.As(err, &re) || re.Kind != ErrInput || !strings.Contains(err.Error(), "nested deeper") {
			t.Errorf("error = %v, want ErrInput about nesting", err)
		}
	}
	msgs := []Message{{Role: "assistant", ToolCalls: []ToolCall{{Name: "f", Arguments: `{"a":` + deep + `}`}}}}
	if _, err := tmpl.Render(msgs, Options{}); err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Errorf("deep tool-call arguments: error = %v", err)
	}
	ok := strings.Repeat("[", 100) + strings.Repeat("]", 100)
	if got, err := tmpl.Render(nil, Options{Tools: json.RawMessage(ok)}); err != nil || got != ok {
		t.Errorf("100 levels: %q, %v", got, err)
	}
}
