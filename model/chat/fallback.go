package chat

import (
	"fmt"
	"strings"
)

// fallbackSource returns the Jinja source of the built-in template name.
// The built-in templates serve models whose GGUF carries no chat template
// (or one that does not compile). Each writes the format its family was
// trained on:
//
//	chatml  <|im_start|>{role}\n{content}<|im_end|>\n ... <|im_start|>assistant\n
//	llama3  {bos}<|start_header_id|>{role}<|end_header_id|>\n\n{content}<|eot_id|> ...
//	llama2  {bos}[INST] <<SYS>>\n{system}\n<</SYS>>\n\n{user} [/INST] {assistant} {eos}{bos}[INST] ...
//
// Llama 2 has no separate generation prompt: a prompt ending in [/INST]
// already asks for the assistant's turn.
func fallbackSource(name string) (string, bool) {
	switch name {
	case "chatml":
		return `
{%- for message in messages -%}
    {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{- '<|im_start|>assistant\n' -}}
{%- endif -%}`, true

	case "llama3":
		return `
{{- bos_token -}}
{%- for message in messages -%}
    {{- '<|start_header_id|>' + message.role + '<|end_header_id|>\n\n' + message.content | trim + '<|eot_id|>' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
{%- endif -%}`, true

	case "llama2":
		return `
{%- if messages and messages[0].role == 'system' -%}
    {%- set system = messages[0].content | trim -%}
    {%- set turns = messages[1:] -%}
{%- else -%}
    {%- set system = '' -%}
    {%- set turns = messages -%}
{%- endif -%}
{%- for message in turns -%}
    {%- if (message.role == 'user') != (loop.index0 % 2 == 0) -%}
        {{- raise_exception('llama2 template: after an optional system message, roles must alternate user/assistant') -}}
    {%- endif -%}
    {%- if message.role == 'user' -%}
        {%- set content = message.content | trim -%}
        {%- if loop.first and system -%}
            {%- set content = '<<SYS>>\n' + system + '\n<</SYS>>\n\n' + content -%}
        {%- endif -%}
        {{- bos_token + '[INST] ' + content + ' [/INST]' -}}
    {%- else -%}
        {{- ' ' + message.content | trim + ' ' + eos_token -}}
    {%- endif -%}
{%- endfor -%}`, true
	}
	return "", false
}

// Fallback returns the built-in template called name: "chatml", "llama3"
// or "llama2".
func Fallback(name string) (*Template, error) {
	src, ok := fallbackSource(name)
	if !ok {
		return nil, fmt.Errorf("chat: unknown fallback template %q (have %s)", name, strings.Join(FallbackNames(), ", "))
	}
	t, err := New(src)
	if err != nil {
		return nil, fmt.Errorf("chat: fallback %q: %w", name, err)
	}
	return t, nil
}

// FallbackNames lists the built-in templates.
func FallbackNames() []string { return []string{"chatml", "llama2", "llama3"} }

// Detect guesses the prompt format of a template from the special tokens it
// writes and returns the name of the matching fallback, or "" when it
// cannot tell. It lets a server keep a model usable whose own template
// fails to compile. Mistral's [INST] format is reported as "llama2", its
// closest relative.
func Detect(src string) string {
	switch {
	case strings.Contains(src, "<|im_start|>"):
		return "chatml"
	case strings.Contains(src, "<|start_header_id|>"):
		return "llama3"
	case strings.Contains(src, "[INST]"):
		return "llama2"
	}
	return ""
}
