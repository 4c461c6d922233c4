package chat

import (
	"strings"
	"testing"
)

func TestFallbackFormats(t *testing.T) {
	sysChat := []Message{
		{Role: "system", Content: "Be brief."},
		{Role: "user", Content: "Hi"},
		{Role: "assistant", Content: "Hello."},
		{Role: "user", Content: "2+2?"},
	}
	llama := Options{AddGenerationPrompt: true, BOSToken: "<s>", EOSToken: "</s>"}
	tests := []struct {
		name, template string
		msgs           []Message
		opts           Options
		want           string
	}{
		{"chatml", "chatml", sysChat, Options{AddGenerationPrompt: true},
			"<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n" +
				"<|im_start|>assistant\nHello.<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n"},
		{"chatml no generation prompt", "chatml", sysChat[1:2], Options{},
			"<|im_start|>user\nHi<|im_end|>\n"},
		{"chatml keeps whitespace", "chatml", []Message{{Role: "user", Content: " x \n"}}, Options{},
			"<|im_start|>user\n x \n<|im_end|>\n"},
		{"llama3", "llama3", sysChat, Options{AddGenerationPrompt: true, BOSToken: "<|begin_of_text|>"},
			"<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>" +
				"<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>" +
				"<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>" +
				"<|start_header_id|>user<|end_header_id|>\n\n2+2?<|eot_id|>" +
				"<|start_header_id|>assistant<|end_header_id|>\n\n"},
		{"llama3 trims content", "llama3", []Message{{Role: "user", Content: "\n hi \n"}}, Options{BOSToken: "<|begin_of_text|>"},
			"<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>"},
		{"llama2 with system", "llama2", sysChat, llama,
			"<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello. </s><s>[INST] 2+2? [/INST]"},
		{"llama2 without system", "llama2", sysChat[1:], llama,
			"<s>[INST] Hi [/INST] Hello. </s><s>[INST] 2+2? [/INST]"},
		{"llama2 trims content", "llama2", []Message{{Role: "user", Content: "  hi\n"}}, llama,
			"<s>[INST] hi [/INST]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, err := Fallback(tc.template)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tmpl.Render(tc.msgs, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// The built-in llama3 and chatml templates must agree with the templates
// real models ship (Llama 3 and Qwen3) on the golden conversations.
func TestFallbackMatchesGolden(t *testing.T) {
	golden := loadGolden(t)
	for family, fallback := range map[string]string{"llama3": "llama3", "qwen3": "chatml"} {
		t.Run(family, func(t *testing.T) {
			tmpl, err := Fallback(fallback)
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range golden[family] {
				got, err := tmpl.Render(c.Messages, Options{AddGenerationPrompt: c.AddGenerationPrompt, BOSToken: "<|begin_of_text|>"})
				if err != nil {
					t.Fatalf("conversation %d: %v", i, err)
				}
				if got != c.Rendered {
					t.Errorf("conversation %d:\n got %q\nwant %q", i, got, c.Rendered)
				}
			}
		})
	}
}

func TestFallbackErrors(t *testing.T) {
	if _, err := Fallback("vicuna"); err == nil || !strings.Contains(err.Error(), `"vicuna"`) {
		t.Errorf("Fallback(vicuna) error = %v, want one naming the template", err)
	}
	tmpl, err := Fallback("llama2")
	if err != nil {
		t.Fatal(err)
	}
	_, err = tmpl.Render([]Message{{Role: "user", Content: "a"}, {Role: "user", Content: "b"}}, Options{})
	if err == nil || !strings.Contains(err.Error(), "roles must alternate") {
		t.Errorf("llama2 with two user turns in a row: error = %v, want the template's raise_exception message", err)
	}
}

func TestFallbackNames(t *testing.T) {
	for _, name := range FallbackNames() {
		if _, err := Fallback(name); err != nil {
			t.Errorf("Fallback(%q): %v", name, err)
		}
	}
}

func TestDetect(t *testing.T) {
	tests := []struct{ src, want string }{
		{"{{ '<|im_start|>' + message.role }}", "chatml"},
		{"{{ '<|start_header_id|>' + message['role'] }}", "llama3"},
		{"{{ bos_token + '[INST] ' + content + ' [/INST]' }}", "llama2"},
		{"{{ messages[0].content }}", ""},
	}
	for _, tc := range tests {
		if got := Detect(tc.src); got != tc.want {
			t.Errorf("Detect(%q) = %q, want %q", tc.src, got, tc.want)
		}
	}
	for _, name := range FallbackNames() {
		src, _ := fallbackSource(name)
		if got := Detect(src); got != name {
			t.Errorf("Detect(fallback %q) = %q", name, got)
		}
	}
}
