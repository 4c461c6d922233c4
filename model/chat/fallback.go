package chat

import (
	"fmt"
	"slices"
	"strings"
)

// Resolve turns the value of --chat-template, or the contents of
// --chat-template-file, into a template: the name of a built-in format
// (see Names; surrounding whitespace ignored) or Jinja source.
func Resolve(value string) (*Template, error) {
	name := strings.TrimSpace(value)
	if _, ok := builtins[name]; ok {
		return Fallback(name)
	}
	if !strings.Contains(value, "{{") && !strings.Contains(value, "{%") {
		if len(name) > 40 {
			name = name[:40] + "..."
		}
		return nil, fmt.Errorf("chat: unknown chat template %q: want Jinja source or one of %s", name, strings.Join(Names(), ", "))
	}
	return New(value)
}

// Fallback returns the built-in format called name (see Names).
func Fallback(name string) (*Template, error) {
	f, ok := builtins[name]
	if !ok {
		return nil, fmt.Errorf("chat: unknown built-in template %q (have %s)", name, strings.Join(Names(), ", "))
	}
	return &Template{src: name, builtin: &builtin{name: name, format: f}}, nil
}

// Names lists the built-in formats, sorted.
func Names() []string {
	names := make([]string, 0, len(builtins))
	for n := range builtins {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// FallbackNames is Names.
func FallbackNames() []string { return Names() }

// Detect guesses the built-in format a Jinja template writes from the
// tokens in its source, with llama.cpp's rules (llm_chat_detect_template),
// and returns its name, or "" when it cannot tell. It lets a server keep a
// model usable whose own template fails to compile.
func Detect(src string) string {
	has := func(s string) bool { return strings.Contains(src, s) }
	switch {
	case has("<|im_start|>"):
		if has("<|im_sep|>") {
			return "phi4"
		}
		if has("<end_of_utterance>") {
			return "" // SmolVLM: not chatml
		}
		return "chatml"
	case strings.HasPrefix(src, "mistral") || has("[INST]"):
		return detectINST(has)
	case has("<|assistant|>") && has("<|end|>"):
		return "phi3"
	case has("[gMASK]<sop>"):
		return ""
	case has("<|assistant|>") && has("<|user|>"):
		if has("</s>") {
			return "falcon3"
		}
		return ""
	case has("<|user|>") && has("<|endoftext|>"):
		return "zephyr"
	case has("bos_token + message['role']"):
		return "monarch"
	case has("<start_of_turn>"):
		return "gemma"
	case has("GPT4 Correct "):
		return "openchat"
	case has("USER: ") && has("ASSISTANT: "):
		if has("SYSTEM: ") {
			return "vicuna-orca"
		}
		return "vicuna"
	case has("### Instruction:") && has("<|EOT|>"):
		return "deepseek"
	case has("<|START_OF_TURN_TOKEN|>") && has("<|USER_TOKEN|>"):
		return "command-r"
	case has("<|start_header_id|>") && has("<|end_header_id|>"):
		return "llama3"
	case has("'Assistant: ' + message['content'] + eos_token"):
		return "deepseek2"
	case has("<｜Assistant｜>") && has("<｜User｜>") && has("<｜end▁of▁sentence｜>"):
		return "deepseek3"
	case has("<|start_of_role|>"):
		return "granite"
	case has("<|header_start|>") && has("<|header_end|>"):
		return "llama4"
	}
	return ""
}

// detectINST tells the Mistral and Llama 2 [INST] formats apart.
func detectINST(has func(string) bool) string {
	switch {
	case has("[SYSTEM_PROMPT]"):
		return "mistral-v7"
	case has("' [INST] ' + system_message") || has("[AVAILABLE_TOOLS]"):
		if has(" [INST]") {
			return "mistral-v1"
		}
		if has(`"[INST]"`) {
			return "mistral-v3-tekken"
		}
		return "mistral-v3"
	case has("content.strip()"):
		return "llama2-sys-strip"
	case has("bos_token + '[INST]"):
		return "llama2-sys-bos"
	case has("<<SYS>>"):
		return "llama2-sys"
	}
	return "llama2"
}
