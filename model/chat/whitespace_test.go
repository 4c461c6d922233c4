package chat

import "testing"

// The expected outputs are those of Python Jinja2 3.1 configured as
// transformers configures it (trim_blocks, lstrip_blocks), with
// xs = [1, 2].
func TestWhitespaceMatchesJinja2(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"newline before a block after an expression", "{% for x in xs %}{{ x }}\n{% endfor %}", "1\n2\n"},
		{"- strips only the adjacent text", "user\n{{ xs[0] }}{%- if true %}!{% endif %}", "user\n1!"},
		{"lstrip only at the start of a line", "  {{ xs[0] }}{% if true %}!{% endif %}", "  1!"},
		{"trim_blocks takes one newline", "{% if true %}{% endif %}\n\nx", "\nx"},
		{"final newline dropped", "a\n", "a"},
		{"newline after a block dropped", "a\n{% if true %}b{% endif %}\nx", "a\nbx"},
		{"indented blocks", "  {% for x in xs %}\n    {{ x }}\n  {% endfor %}\ndone", "    1\n    2\ndone"},
		{"- on both sides", "{%- for x in xs -%}\n  [{{ x }}]\n{%- endfor %}\ntail", "[1][2]tail"},
		{"comments", "a {# comment #}\nb\n  {# c2 #}\nc", "a b\nc"},
		{"spaces between tags on one line", "{% for x in xs %}  {{ x }}  {% endfor %}", "  1    2  "},
		{"+ keeps whitespace", "{% for x in xs +%}\n{{ x }}\n{%+ endfor %}", "\n1\n\n2\n"},
		{"- strips newlines and spaces", "line1  \n  {%- if true -%}  \n mid \n  {%- endif %}", "line1mid"},
		{"tabs", "a\t \n\t{% if true %}\nt\n{% endif %}", "a\t \nt\n"},
		{"closers inside strings", `{{ "q\"uote}}" }} {{ '%}' }}`, `q"uote}} %}`},
		{"raw", "  {% raw %}\n  {{ raw }} \n  {% endraw %}\nafter", "\n  {{ raw }} \nafter"},
		{"raw with -", "{%- raw -%}  x  {%- endraw -%}  y", "xy"},
		{"macro", "{% macro f(a) %}\n  <{{ a }}>\n{% endmacro %}\n{{ f(1) }}|{{ f(2) }}", "  <1>\n|  <2>\n"},
		{"text with quotes and backslashes", `it's a \n {{ xs[0] }} \'`, `it's a \n 1 \'`},
		{"crlf", "a\r\n{% if true %}\r\nb\r\n{% endif %}\r\n", "a\nb\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := render(t, tc.src, nil, Options{Vars: map[string]any{"xs": []any{1, 2}}})
			if got != tc.want {
				t.Errorf("%q:\n got %q\nwant %q", tc.src, got, tc.want)
			}
		})
	}
}
