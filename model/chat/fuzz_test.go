package chat

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"
)

// fuzzMessages builds a conversation from fuzz input: roles picks each
// message's role, text is split at '|' into the contents.
func fuzzMessages(roles []byte, text string) []Message {
	names := []string{"system", "user", "assistant", "tool", "user"}
	parts := strings.Split(text, "|")
	msgs := make([]Message, 0, len(parts))
	for i, p := range parts {
		if i >= 16 {
			break
		}
		role := "user"
		if i < len(roles) {
			role = names[int(roles[i])%len(names)]
		}
		m := Message{Role: role, Content: p}
		if role == "assistant" && i < len(roles) && roles[i]&0x80 != 0 {
			m.ToolCalls = []ToolCall{{ID: "c" + p, Name: "get_weather", Arguments: `{"city":` + jsonQuote(p) + `}`}}
		}
		msgs = append(msgs, m)
	}
	return msgs
}

func jsonQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

// FuzzSharedTemplates renders random conversations through the model
// authors' templates and the built-in formats: every render either succeeds within the bounds or
// fails with a *RenderError the template caused, never a panic or a bound.
func FuzzSharedTemplates(f *testing.F) {
	srcs := sharedTemplates(f)
	names := make([]string, 0, len(srcs))
	for n := range srcs {
		names = append(names, n)
	}
	sort.Strings(names)
	tmpls := make([]*Template, len(names))
	for i, n := range names {
		t, err := New(srcs[n])
		if err != nil {
			f.Fatalf("%s: %v", n, err)
		}
		tmpls[i] = t
	}
	for _, n := range Names() {
		t, err := Fallback(n)
		if err != nil {
			f.Fatal(err)
		}
		names, tmpls = append(names, n), append(tmpls, t)
	}
	f.Add([]byte{0, 1, 2, 1}, "Be brief.|Hi|Hello.|2+2?", true)
	f.Add([]byte{1, 2 | 0x80, 3, 2}, "Weather?|x|{\"t\": 1}|Done", false)
	f.Add([]byte{2, 2, 2}, "{{ 7 * 7 }}|{% raw %}|\x00\xff", true)
	f.Fuzz(func(t *testing.T, roles []byte, text string, addPrompt bool) {
		msgs := fuzzMessages(roles, text)
		opts := toolConversation.opts
		opts.AddGenerationPrompt = addPrompt
		for i, tmpl := range tmpls {
			_, err := tmpl.Render(msgs, opts)
			if err == nil {
				continue
			}
			var re *RenderError
			if !errors.As(err, &re) {
				t.Fatalf("%s: error %v is not a *RenderError", names[i], err)
			}
			if re.Kind == ErrLimit || re.Kind == ErrWorker || re.Kind == ErrCanceled {
				t.Fatalf("%s: %v", names[i], err)
			}
		}
	})
}

// FuzzRendererSource renders random template sources through the bounded
// Renderer: each render ends within the time bound with a result or a
// *RenderError, and the Renderer keeps serving.
func FuzzRendererSource(f *testing.F) {
	for _, src := range []string{
		"{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}",
		"{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
		"{% for i in range(100000000) %}{{ i }}{% endfor %}",
		"{{ 'abc' * 10000000000 }}",
		"{% for i in range(50000) %}{{ 'x' * 100 }}{% endfor %}",
		"{{ raise_exception('no') }}",
		"{% set ns = namespace(a=[]) %}{% for m in messages %}{% set ns.a = ns.a + [m] %}{% endfor %}{{ ns.a | length }}",
		"{{ messages | tojson }}{{ messages[0].content | upper }}",
	} {
		f.Add(src)
	}
	lim := Limits{Timeout: 300 * time.Millisecond, MaxOutput: 1 << 20, Workers: 1}
	msgs := []Message{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "yo"}}
	f.Fuzz(func(t *testing.T, src string) {
		tmpl, err := New(src)
		if err != nil {
			return
		}
		r, err := NewRenderer(tmpl, lim)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for range 2 {
			start := time.Now()
			out, err := r.Render(context.Background(), msgs, Options{})
			if took := time.Since(start); took > lim.Timeout+5*time.Second {
				t.Fatalf("render took %v, bound %v", took, lim.Timeout)
			}
			var re *RenderError
			if err != nil && !errors.As(err, &re) {
				t.Fatalf("error %v is not a *RenderError", err)
			}
			if err != nil && re.Kind == ErrWorker {
				t.Fatalf("worker failure: %v", err)
			}
			if len(out) > lim.MaxOutput {
				t.Fatalf("%d bytes of output, bound %d", len(out), lim.MaxOutput)
			}
		}
	})
}
