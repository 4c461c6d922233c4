package main

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"llmserve/model/chat"
)

func TestServeFlags(t *testing.T) {
	tests := []struct {
		args  []string
		check func(o serveOptions) bool
	}{
		{[]string{"-m", "x.gguf"}, func(o serveOptions) bool {
			return o.model == "x.gguf" && o.host == "127.0.0.1" && o.port == 8080 && o.parallel == 4 && o.timeout == 10*time.Minute
		}},
		{[]string{"--model", "y.gguf", "-np", "8", "-c", "2048", "-ngl", "99", "--port", "9000"}, func(o serveOptions) bool {
			return o.model == "y.gguf" && o.parallel == 8 && o.ctxSize == 2048 && o.gpuLayers == 99 && o.port == 9000
		}},
		{[]string{"-m", "z", "--timeout", "90", "--shutdown-timeout", "1m"}, func(o serveOptions) bool {
			return o.timeout == 90*time.Second && o.shutdown == time.Minute
		}},
		{[]string{"-m", "z", "--api-key", "k", "--cors-origin", "*", "--alias", "tiny", "--no-cuda-graphs"}, func(o serveOptions) bool {
			return o.apiKey == "k" && o.cors == "*" && o.alias == "tiny" && o.noCUDAGraphs
		}},
	}
	for _, tt := range tests {
		var o serveOptions
		fs := serveFlags(&o)
		fs.SetOutput(io.Discard)
		if err := fs.Parse(tt.args); err != nil {
			t.Errorf("%v: %v", tt.args, err)
			continue
		}
		if !tt.check(o) {
			t.Errorf("%v parsed as %+v", tt.args, o)
		}
	}
	var o serveOptions
	fs := serveFlags(&o)
	fs.SetOutput(io.Discard)
	if err := fs.Parse([]string{"--timeout", "soon"}); err == nil {
		t.Errorf("--timeout soon accepted")
	}
}

func TestServeNeedsModel(t *testing.T) {
	if err := serveCmd([]string{"--port", "0"}); err == nil || !strings.Contains(err.Error(), "--model") {
		t.Errorf("serve without a model: %v", err)
	}
}

func TestChatTemplateChoice(t *testing.T) {
	msgs := []chat.Message{{Role: "user", Content: "hi"}}
	tests := []struct {
		name, flag, src, want string
	}{
		{"no template: chatml", "", "", "<|im_start|>user"},
		{"flag wins", "llama3", "{{ 'own' }}", "<|start_header_id|>user"},
		{"model's own", "", "{% for m in messages %}[{{ m.content }}]{% endfor %}", "[hi]"},
		{"broken [INST] template: llama2", "", "[INST] {% for %}", "[INST]"},
	}
	for _, tt := range tests {
		tmpl, err := chatTemplate(tt.flag, tt.src, zerolog.Nop())
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		got, err := tmpl.Render(msgs, chat.Options{AddGenerationPrompt: true})
		if err != nil || !strings.Contains(got, tt.want) {
			t.Errorf("%s: rendered %q (%v), want it to contain %q", tt.name, got, err, tt.want)
		}
	}
}
