package chat

import (
	"strings"
	"testing"
)

// The expected prompts are what llama.cpp's llm_chat_apply_template
// writes for the same name and conversation.
func TestBuiltinFormats(t *testing.T) {
	conv := []Message{
		{Role: "system", Content: "Be brief."},
		{Role: "user", Content: "Hi"},
		{Role: "assistant", Content: " Hello. "},
		{Role: "user", Content: "2+2?"},
	}
	tests := []struct{ name, want string }{
		{"chatml", "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n Hello. <|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n"},
		{"llama2", "[INST] Be brief.\nHi [/INST] Hello. </s>[INST] 2+2? [/INST]"},
		{"llama2-sys", "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello. </s>[INST] 2+2? [/INST]"},
		{"llama2-sys-bos", "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello. </s><s>[INST] 2+2? [/INST]"},
		{"llama2-sys-strip", "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST]Hello.</s>[INST] 2+2? [/INST]"},
		{"mistral", "[INST] Be brief.\nHi [/INST] Hello. </s>[INST] 2+2? [/INST]"},
		{"mistral-v1", " [INST] Be brief.\n\nHi [/INST]  Hello. </s> [INST] 2+2? [/INST]"},
		{"mistral-v3", "[INST] Be brief.\n\nHi[/INST] Hello.</s>[INST] 2+2?[/INST]"},
		{"mistral-v3-tekken", "[INST]Be brief.\n\nHi[/INST] Hello. </s>[INST]2+2?[/INST]"},
		{"mistral-v7", "[SYSTEM_PROMPT] Be brief.[/SYSTEM_PROMPT][INST] Hi[/INST]  Hello. </s>[INST] 2+2?[/INST]"},
		{"mistral-v7-tekken", "[SYSTEM_PROMPT]Be brief.[/SYSTEM_PROMPT][INST]Hi[/INST] Hello. </s>[INST]2+2?[/INST]"},
		{"phi3", "<|system|>\nBe brief.<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\n Hello. <|end|>\n<|user|>\n2+2?<|end|>\n<|assistant|>\n"},
		{"phi4", "<|im_start|>system<|im_sep|>Be brief.<|im_end|><|im_start|>user<|im_sep|>Hi<|im_end|><|im_start|>assistant<|im_sep|> Hello. <|im_end|><|im_start|>user<|im_sep|>2+2?<|im_end|><|im_start|>assistant<|im_sep|>"},
		{"falcon3", "<|system|>\nBe brief.\n<|user|>\nHi\n<|assistant|>\n Hello. \n<|user|>\n2+2?\n<|assistant|>\n"},
		{"zephyr", "<|system|>\nBe brief.<|endoftext|>\n<|user|>\nHi<|endoftext|>\n<|assistant|>\n Hello. <|endoftext|>\n<|user|>\n2+2?<|endoftext|>\n<|assistant|>\n"},
		{"monarch", "system\nBe brief.</s>\n<s>user\nHi</s>\n<s>assistant\n Hello. </s>\n<s>user\n2+2?</s>\n<s>assistant\n"},
		{"gemma", "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello.<end_of_turn>\n<start_of_turn>user\n2+2?<end_of_turn>\n<start_of_turn>model\n"},
		{"openchat", "Be brief.<|end_of_turn|>GPT4 Correct User: Hi<|end_of_turn|>GPT4 Correct Assistant:  Hello. <|end_of_turn|>GPT4 Correct User: 2+2?<|end_of_turn|>GPT4 Correct Assistant:"},
		{"vicuna", "Be brief.\n\nUSER: Hi\nASSISTANT:  Hello. </s>\nUSER: 2+2?\nASSISTANT:"},
		{"vicuna-orca", "SYSTEM: Be brief.\nUSER: Hi\nASSISTANT:  Hello. </s>\nUSER: 2+2?\nASSISTANT:"},
		{"deepseek", "Be brief.### Instruction:\nHi\n### Response:\n Hello. \n<|EOT|>\n### Instruction:\n2+2?\n### Response:\n"},
		{"deepseek2", "Be brief.\n\nUser: Hi\n\nAssistant:  Hello. <｜end▁of▁sentence｜>User: 2+2?\n\nAssistant:"},
		{"deepseek3", "Be brief.\n\n<｜User｜>Hi<｜Assistant｜> Hello. <｜end▁of▁sentence｜><｜User｜>2+2?<｜Assistant｜>"},
		{"command-r", "<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>Be brief.<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|USER_TOKEN|>Hi<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>Hello.<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|USER_TOKEN|>2+2?<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>"},
		{"llama3", "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n2+2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
		{"llama4", "<|header_start|>system<|header_end|>\n\nBe brief.<|eot|><|header_start|>user<|header_end|>\n\nHi<|eot|><|header_start|>assistant<|header_end|>\n\nHello.<|eot|><|header_start|>user<|header_end|>\n\n2+2?<|eot|><|header_start|>assistant<|header_end|>\n\n"},
		{"granite", "<|start_of_role|>system<|end_of_role|>Be brief.<|end_of_text|>\n<|start_of_role|>user<|end_of_role|>Hi<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|> Hello. <|end_of_text|>\n<|start_of_role|>user<|end_of_role|>2+2?<|end_of_text|>\n<|start_of_role|>assistant<|end_of_role|>\n"},
	}
	seen := map[string]bool{}
	for _, tc := range tests {
		seen[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := Resolve(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tmpl.Render(conv, Options{AddGenerationPrompt: true, BOSToken: "<s>"})
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("\n got %q\nwant %q", got, tc.want)
			}
		})
	}
	for _, name := range Names() {
		if !seen[name] {
			t.Errorf("built-in %q has no test", name)
		}
	}
}

// The built-in llama3 and chatml formats must agree with the templates
// real models ship (Llama 3 and Qwen3) on the golden conversations. Like
// llama.cpp's, the built-in llama3 leaves BOS to the tokenizer.
func TestFallbackMatchesGolden(t *testing.T) {
	golden := loadGolden(t)
	for family, fallback := range map[string]string{"llama3": "llama3", "qwen3": "chatml"} {
		t.Run(family, func(t *testing.T) {
			tmpl, err := Fallback(fallback)
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range golden[family] {
				got, err := tmpl.Render(c.Messages, Options{AddGenerationPrompt: c.AddGenerationPrompt})
				if err != nil {
					t.Fatalf("conversation %d: %v", i, err)
				}
				want := c.Rendered
				if family == "llama3" {
					want = strings.TrimPrefix(want, "<|begin_of_text|>")
				}
				if got != want {
					t.Errorf("conversation %d:\n got %q\nwant %q", i, got, want)
				}
			}
		})
	}
}

func TestResolve(t *testing.T) {
	tests := []struct {
		value   string
		builtin string // "" for Jinja
		errHas  string // "" for success
	}{
		{"chatml", "chatml", ""},
		{" mistral-v7\n", "mistral-v7", ""},
		{"{% for m in messages %}{{ m.content }}{% endfor %}", "", ""},
		{"{{ messages[0].content }}", "", ""},
		{"chatml2", "", "one of chatml, command-r, deepseek"},
		{"", "", "unknown chat template"},
		{"{% for m in messages %}", "", "compile template"},
	}
	for _, tc := range tests {
		tmpl, err := Resolve(tc.value)
		switch {
		case tc.errHas != "":
			if err == nil || !strings.Contains(err.Error(), tc.errHas) {
				t.Errorf("Resolve(%q) error = %v, want one containing %q", tc.value, err, tc.errHas)
			}
		case err != nil:
			t.Errorf("Resolve(%q): %v", tc.value, err)
		case tmpl.Builtin() != tc.builtin:
			t.Errorf("Resolve(%q) is built-in %q, want %q", tc.value, tmpl.Builtin(), tc.builtin)
		}
	}
}

func TestFallbackErrors(t *testing.T) {
	if _, err := Fallback("alpaca"); err == nil || !strings.Contains(err.Error(), `"alpaca"`) || !strings.Contains(err.Error(), "llama3") {
		t.Errorf("Fallback(alpaca) error = %v, want one naming the template and the names there are", err)
	}
}

func TestDetect(t *testing.T) {
	tests := []struct{ src, want string }{
		{"{{ '<|im_start|>' + message.role }}", "chatml"},
		{"{{ '<|im_start|>' + message.role + '<|im_sep|>' }}", "phi4"},
		{"{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>' }}", "llama3"},
		{"{{ bos_token + '[INST] ' + content + ' [/INST]' }}", "llama2-sys-bos"},
		{"{{ '[INST] <<SYS>>' }}", "llama2-sys"},
		{"{{ '[INST] ' + content.strip() }}", "llama2-sys-strip"},
		{"{{ '[INST]' }}", "llama2"},
		{"{{ '[SYSTEM_PROMPT]' }}{{ '[INST]' }}", "mistral-v7"},
		{"{{ '[AVAILABLE_TOOLS]' }}{{ '[INST]' }}", "mistral-v3"},
		{"{{ '<start_of_turn>' + role }}", "gemma"},
		{"{{ '<|user|>' }}{{ '<|assistant|>' }}{{ '<|end|>' }}", "phi3"},
		{"{{ '<|user|>' }}{{ '<|endoftext|>' }}", "zephyr"},
		{"{{ 'USER: ' }}{{ 'ASSISTANT: ' }}", "vicuna"},
		{"{{ '<｜User｜>' }}{{ '<｜Assistant｜>' }}{{ '<｜end▁of▁sentence｜>' }}", "deepseek3"},
		{"{{ messages[0].content }}", ""},
	}
	for _, tc := range tests {
		got := Detect(tc.src)
		if got != tc.want {
			t.Errorf("Detect(%q) = %q, want %q", tc.src, got, tc.want)
		}
		if _, err := Fallback(got); got != "" && err != nil {
			t.Errorf("Detect(%q) = %q, not a built-in: %v", tc.src, got, err)
		}
	}
}
