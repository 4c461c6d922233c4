package chat

import "strings"

// builtin is a prompt format written in Go, for models whose GGUF has no
// usable chat template. Each writes exactly what llama.cpp's
// llm_chat_apply_template writes for the same name, so --chat-template
// means the same in both servers. Like llama.cpp's, none writes the BOS
// token: the tokenizer adds it.
type builtin struct {
	name   string
	format func(msgs []Message, addAssistant bool) string
}

// builtins are the formats by name.
var builtins = map[string]func([]Message, bool) string{
	"chatml":            formatChatML,
	"llama2":            llama2Format(false, false, false),
	"llama2-sys":        llama2Format(true, false, false),
	"llama2-sys-bos":    llama2Format(true, true, false),
	"llama2-sys-strip":  llama2Format(true, false, true),
	"mistral":           llama2Format(false, false, false), // llama.cpp detects the name as llama2
	"mistral-v1":        mistralFormat(" ", " ", false),
	"mistral-v3":        mistralFormat("", " ", true),
	"mistral-v3-tekken": mistralFormat("", "", false),
	"mistral-v7":        mistralV7Format(" "),
	"mistral-v7-tekken": mistralV7Format(""),
	"phi3":              formatPhi3,
	"phi4":              formatPhi4,
	"falcon3":           formatFalcon3,
	"zephyr":            formatZephyr,
	"monarch":           formatMonarch,
	"gemma":             formatGemma,
	"openchat":          formatOpenChat,
	"vicuna":            vicunaFormat(false),
	"vicuna-orca":       vicunaFormat(true),
	"deepseek":          formatDeepSeek,
	"deepseek2":         formatDeepSeek2,
	"deepseek3":         formatDeepSeek3,
	"command-r":         formatCommandR,
	"llama3":            formatLlama3,
	"llama4":            formatLlama4,
	"granite":           formatGranite,
}

// trimC trims the ASCII whitespace C's isspace matches, as llama.cpp's
// trim does.
func trimC(s string) string { return strings.Trim(s, " \t\n\v\f\r") }

func formatChatML(msgs []Message, add bool) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString("<|im_start|>" + m.Role + "\n" + m.Content + "<|im_end|>\n")
	}
	if add {
		b.WriteString("<|im_start|>assistant\n")
	}
	return b.String()
}

// mistralV7Format: [SYSTEM_PROMPT] and [INST] turns; sp is the space the
// non-tekken variant writes after each opening tag.
func mistralV7Format(sp string) func([]Message, bool) string {
	return func(msgs []Message, _ bool) string {
		var b strings.Builder
		for _, m := range msgs {
			switch m.Role {
			case "system":
				b.WriteString("[SYSTEM_PROMPT]" + sp + m.Content + "[/SYSTEM_PROMPT]")
			case "user":
				b.WriteString("[INST]" + sp + m.Content + "[/INST]")
			default:
				b.WriteString(sp + m.Content + "</s>")
			}
		}
		return b.String()
	}
}

// mistralFormat: the v1, v3 and v3-tekken formats, which differ in the
// spaces around [INST] and whether assistant text is trimmed.
func mistralFormat(lead, trail string, trimAssistant bool) func([]Message, bool) string {
	return func(msgs []Message, _ bool) string {
		var b strings.Builder
		inTurn := false
		for _, m := range msgs {
			if !inTurn {
				b.WriteString(lead + "[INST]" + trail)
				inTurn = true
			}
			switch m.Role {
			case "system":
				b.WriteString(m.Content + "\n\n")
			case "user":
				b.WriteString(m.Content + lead + "[/INST]")
			default:
				c := m.Content
				if trimAssistant {
					c = trimC(c)
				}
				b.WriteString(trail + c + "</s>")
				inTurn = false
			}
		}
		return b.String()
	}
}

// llama2Format: Llama 2's [INST] format; sys wraps a system message in
// <<SYS>>, bos writes <s> before each later turn, strip trims content.
func llama2Format(sys, bos, strip bool) func([]Message, bool) string {
	return func(msgs []Message, _ bool) string {
		var b strings.Builder
		b.WriteString("[INST] ")
		inTurn := true
		for _, m := range msgs {
			c := m.Content
			if strip {
				c = trimC(c)
			}
			if !inTurn {
				inTurn = true
				if bos {
					b.WriteString("<s>")
				}
				b.WriteString("[INST] ")
			}
			switch m.Role {
			case "system":
				if sys {
					b.WriteString("<<SYS>>\n" + c + "\n<</SYS>>\n\n")
				} else {
					b.WriteString(c + "\n")
				}
			case "user":
				b.WriteString(c + " [/INST]")
			default:
				b.WriteString(c + "</s>")
				inTurn = false
			}
		}
		return b.String()
	}
}

// roleTagged writes open(role) + content + close for each message and
// prompt at the end; the shape of several formats.
func roleTagged(msgs []Message, add bool, open func(role string) string, end, prompt string, trim bool) string {
	var b strings.Builder
	for _, m := range msgs {
		c := m.Content
		if trim {
			c = trimC(c)
		}
		b.WriteString(open(m.Role) + c + end)
	}
	if add {
		b.WriteString(prompt)
	}
	return b.String()
}

func formatPhi3(msgs []Message, add bool) string {
	return roleTagged(msgs, add, func(r string) string { return "<|" + r + "|>\n" }, "<|end|>\n", "<|assistant|>\n", false)
}

func formatPhi4(msgs []Message, add bool) string {
	return roleTagged(msgs, add, func(r string) string { return "<|im_start|>" + r + "<|im_sep|>" }, "<|im_end|>", "<|im_start|>assistant<|im_sep|>", false)
}

func formatFalcon3(msgs []Message, add bool) string {
	return roleTagged(msgs, add, func(r string) string { return "<|" + r + "|>\n" }, "\n", "<|assistant|>\n", false)
}

func formatZephyr(msgs []Message, add bool) string {
	return roleTagged(msgs, add, func(r string) string { return "<|" + r + "|>\n" }, "<|endoftext|>\n", "<|assistant|>\n", false)
}

func formatLlama3(msgs []Message, add bool) string {
	return roleTagged(msgs, add, func(r string) string { return "<|start_header_id|>" + r + "<|end_header_id|>\n\n" }, "<|eot_id|>",
		"<|start_header_id|>assistant<|end_header_id|>\n\n", true)
}

func formatLlama4(msgs []Message, add bool) string {
	return roleTagged(msgs, add, func(r string) string { return "<|header_start|>" + r + "<|header_end|>\n\n" }, "<|eot|>",
		"<|header_start|>assistant<|header_end|>\n\n", true)
}

func formatGranite(msgs []Message, add bool) string {
	return roleTagged(msgs, add, func(r string) string {
		if r == "assistant_tool_call" {
			return "<|start_of_role|>" + r + "<|end_of_role|><|tool_call|>"
		}
		return "<|start_of_role|>" + r + "<|end_of_role|>"
	}, "<|end_of_text|>\n", "<|start_of_role|>assistant<|end_of_role|>\n", false)
}

// formatMonarch writes <s> before every message but the first.
func formatMonarch(msgs []Message, add bool) string {
	var b strings.Builder
	for i, m := range msgs {
		if i > 0 {
			b.WriteString("<s>")
		}
		b.WriteString(m.Role + "\n" + m.Content + "</s>\n")
	}
	if add {
		b.WriteString("<s>assistant\n")
	}
	return b.String()
}

// formatGemma has no system turn: system text goes before the next
// non-model turn's content; assistant is "model".
func formatGemma(msgs []Message, add bool) string {
	var b strings.Builder
	system := ""
	for _, m := range msgs {
		role := m.Role
		if role == "system" {
			system += trimC(m.Content)
			continue
		}
		if role == "assistant" {
			role = "model"
		}
		b.WriteString("<start_of_turn>" + role + "\n")
		if system != "" && role != "model" {
			b.WriteString(system + "\n\n")
			system = ""
		}
		b.WriteString(trimC(m.Content) + "<end_of_turn>\n")
	}
	if add {
		b.WriteString("<start_of_turn>model\n")
	}
	return b.String()
}

func formatOpenChat(msgs []Message, add bool) string {
	var b strings.Builder
	for _, m := range msgs {
		if m.Role == "system" {
			b.WriteString(m.Content + "<|end_of_turn|>")
			continue
		}
		role := m.Role
		if role != "" && role[0] >= 'a' && role[0] <= 'z' {
			role = string(role[0]-'a'+'A') + role[1:]
		}
		b.WriteString("GPT4 Correct " + role + ": " + m.Content + "<|end_of_turn|>")
	}
	if add {
		b.WriteString("GPT4 Correct Assistant:")
	}
	return b.String()
}

// vicunaFormat: USER:/ASSISTANT: lines; the Orca variant prefixes the
// system text with SYSTEM:. Other roles are left out.
func vicunaFormat(orca bool) func([]Message, bool) string {
	return func(msgs []Message, add bool) string {
		var b strings.Builder
		for _, m := range msgs {
			switch m.Role {
			case "system":
				if orca {
					b.WriteString("SYSTEM: " + m.Content + "\n")
				} else {
					b.WriteString(m.Content + "\n\n")
				}
			case "user":
				b.WriteString("USER: " + m.Content + "\n")
			case "assistant":
				b.WriteString("ASSISTANT: " + m.Content + "</s>\n")
			}
		}
		if add {
			b.WriteString("ASSISTANT:")
		}
		return b.String()
	}
}

// byRole writes each system, user and assistant message between the
// prefix and suffix its role has; other roles are left out.
func byRole(msgs []Message, add bool, sys, user, asst [2]string, prompt string, trim bool) string {
	var b strings.Builder
	for _, m := range msgs {
		c := m.Content
		if trim {
			c = trimC(c)
		}
		var fix [2]string
		switch m.Role {
		case "system":
			fix = sys
		case "user":
			fix = user
		case "assistant":
			fix = asst
		default:
			continue
		}
		b.WriteString(fix[0] + c + fix[1])
	}
	if add {
		b.WriteString(prompt)
	}
	return b.String()
}

func formatDeepSeek(msgs []Message, add bool) string {
	return byRole(msgs, add, [2]string{"", ""}, [2]string{"### Instruction:\n", "\n"},
		[2]string{"### Response:\n", "\n<|EOT|>\n"}, "### Response:\n", false)
}

func formatDeepSeek2(msgs []Message, add bool) string {
	return byRole(msgs, add, [2]string{"", "\n\n"}, [2]string{"User: ", "\n\n"},
		[2]string{"Assistant: ", "<｜end▁of▁sentence｜>"}, "Assistant:", false)
}

func formatDeepSeek3(msgs []Message, add bool) string {
	return byRole(msgs, add, [2]string{"", "\n\n"}, [2]string{"<｜User｜>", ""},
		[2]string{"<｜Assistant｜>", "<｜end▁of▁sentence｜>"}, "<｜Assistant｜>", false)
}

func formatCommandR(msgs []Message, add bool) string {
	const end = "<|END_OF_TURN_TOKEN|>"
	return byRole(msgs, add, [2]string{"<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>", end},
		[2]string{"<|START_OF_TURN_TOKEN|><|USER_TOKEN|>", end},
		[2]string{"<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>", end}, "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>", true)
}
