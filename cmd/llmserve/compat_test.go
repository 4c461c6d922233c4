package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"llmserve/decode"
	"llmserve/model/chat"
)

// parseServe parses args as serveCmd does, up to the options' finish.
func parseServe(args []string, out io.Writer) (serveOptions, error) {
	var o serveOptions
	fs := serveFlags(&o)
	fs.SetOutput(out)
	if err := fs.Parse(joinOptionalValues(args)); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, errors.New("unexpected argument " + fs.Arg(0))
	}
	return o, o.finish()
}

func TestLlamaServerFlagsAccepted(t *testing.T) {
	tests := []struct {
		args  []string
		check func(o serveOptions) bool
	}{
		{[]string{"-m", "x", "--jinja", "-fa", "on", "-cb", "--metrics", "--no-webui", "--mlock", "--no-mmap"}, func(o serveOptions) bool {
			return o.model == "x" && len(o.notes) == 6 && o.noWebUI
		}},
		{[]string{"-m", "x", "--webui-path", "/srv/page"}, func(o serveOptions) bool { return o.webuiPath == "/srv/page" && !o.noWebUI }},
		{[]string{"-m", "x", "--path", "/srv/page"}, func(o serveOptions) bool { return o.webuiPath == "/srv/page" }},
		{[]string{"-m", "x", "--slots"}, func(o serveOptions) bool { return len(o.notes) == 1 && !o.noSlots }},
		{[]string{"-m", "x", "-fa", "-np", "2"}, func(o serveOptions) bool { return o.parallel == 2 && len(o.notes) == 1 }},
		{[]string{"-m", "x", "--flash-attn", "auto"}, func(o serveOptions) bool { return len(o.notes) == 1 }},
		{[]string{"-m", "x", "-n", "64"}, func(o serveOptions) bool { return o.defaults.MaxTokens == 64 }},
		{[]string{"-m", "x", "--n-predict", "-1"}, func(o serveOptions) bool { return o.defaults.MaxTokens == 0 }},
		{[]string{"-m", "x", "--temp", "0.7", "--top-k", "20", "--top-p", "0.9", "-s", "42"}, func(o serveOptions) bool {
			d := o.defaults
			return *d.Temperature == 0.7 && *d.TopK == 20 && *d.TopP == 0.9 && *d.Seed == 42
		}},
		{[]string{"-m", "x", "-s", "-1"}, func(o serveOptions) bool { return o.defaults.Seed == nil && o.defaults.Temperature == nil }},
		{[]string{"-m", "x", "-b", "2048", "-ub", "512"}, func(o serveOptions) bool { return o.batch == 512 }},
		{[]string{"-m", "x", "-b", "256", "--ubatch-size", "512"}, func(o serveOptions) bool { return o.batch == 256 }},
		{[]string{"-m", "x", "-t", "4", "-tb", "8"}, func(o serveOptions) bool { return o.threads == 4 && len(o.notes) == 1 }},
		{[]string{"-m", "x", "-ctk", "f32", "--cache-type-v", "F32"}, func(o serveOptions) bool {
			return len(o.refused) == 0 && o.cacheTypeK == decode.KVF32 && o.cacheTypeV == decode.KVF32
		}},
		{[]string{"-m", "x", "-ctk", "q8_0", "-ctv", "f16"}, func(o serveOptions) bool {
			return o.cacheTypeK == decode.KVQ8_0 && o.cacheTypeV == decode.KVF16
		}},
		{[]string{"-m", "x"}, func(o serveOptions) bool {
			return o.cacheTypeK == decode.KVDefault && o.kvMemory == 0 && o.kvBlock == decode.DefaultBlockSize && !o.noPrefixCache
		}},
		{[]string{"-m", "x", "--kv-memory", "512M", "--kv-block-size", "16", "--no-prefix-cache"}, func(o serveOptions) bool {
			return o.kvMemory == 512<<20 && o.kvBlock == 16 && o.noPrefixCache
		}},
		{[]string{"-m", "x", "--kv-memory", "1.5GiB"}, func(o serveOptions) bool { return o.kvMemory == 3<<29 }},
		{[]string{"-m", "x", "--kv-memory", "4096"}, func(o serveOptions) bool { return o.kvMemory == 4096 && o.kvShare == 0 }},
		{[]string{"-m", "x", "--kv-memory", "40%"}, func(o serveOptions) bool { return o.kvMemory == 0 && o.kvShare == 0.4 }},
		{[]string{"-m", "x", "-dev", "none"}, func(o serveOptions) bool { return o.gpuLayers == 0 }},
		{[]string{"-m", "x", "--device", "CUDA0"}, func(o serveOptions) bool { return o.gpuLayers == 99 }},
		{[]string{"-m", "x", "--log-disable"}, func(o serveOptions) bool { return o.logDisable }},
		{[]string{"-m", "x", "-v"}, func(o serveOptions) bool { return o.verbose }},
		{[]string{"-m", "x", "-a", "tiny", "-to", "30"}, func(o serveOptions) bool { return o.alias == "tiny" && o.timeout.Seconds() == 30 }},
		{[]string{"-m", "x", "--metrics=false"}, func(o serveOptions) bool { return len(o.notes) == 0 }},
		{[]string{"-m", "x", "--no-context-shift", "--cache-reuse", "256", "--reasoning-format", "deepseek",
			"--threads-http", "4", "--numa", "distribute", "-nkvo", "--log-colors", "--no-slots"}, func(o serveOptions) bool { return len(o.notes) == 7 && o.noSlots }},
		{[]string{"-m", "x", "-mg", "0", "-lv", "4"}, func(o serveOptions) bool { return o.verbose && len(o.refused) == 0 }},
		{[]string{"-m", "x", "--log-file", "/tmp/x.log"}, func(o serveOptions) bool { return o.logFile == "/tmp/x.log" }},
	}
	for _, tt := range tests {
		o, err := parseServe(tt.args, io.Discard)
		if err != nil {
			t.Errorf("%v: %v", tt.args, err)
			continue
		}
		if !tt.check(o) {
			t.Errorf("%v parsed as %+v", tt.args, o)
		}
	}
}

func TestLlamaServerFlagsRefused(t *testing.T) {
	tests := []struct {
		args []string
		want string // in the error: what to use instead
	}{
		{[]string{"-m", "x", "-nocb"}, "--parallel 1"},
		{[]string{"-m", "x", "--no-jinja"}, "--chat-template"},
		{[]string{"-m", "x", "--slot-save-path", "/tmp"}, "leave the flag out"},
		{[]string{"-m", "x", "--props"}, "POST /props"},
		{[]string{"-m", "x", "-s", "x"}, "seed"},
		{[]string{"-m", "x", "--temp", "-1"}, "0 to 100"},
		{[]string{"-m", "x", "--top-k", "-2"}, "0 (off)"},
		{[]string{"-m", "x", "--top-p", "1.5"}, "0 to 1"},
		{[]string{"-m", "x", "-hf", "org/model"}, "--model"},
		{[]string{"-m", "x", "-ctk", "q4_0"}, "f16, q8_0 or f32"},
		{[]string{"-m", "x", "-ctv", "f64"}, "f16, q8_0 or f32"},
		{[]string{"-m", "x", "--kv-memory", "-1G"}, "positive size"},
		{[]string{"-m", "x", "--kv-memory", "lots"}, "positive size"},
		{[]string{"-m", "x", "--kv-memory", "150%"}, "0% to 100%"},
		{[]string{"-m", "x", "-dev", "CUDA1"}, "CUDA0"},
		{[]string{"-m", "x", "-fa", "maybe"}, "on, off or auto"},
		{[]string{"-m", "x", "-n", "0"}, "-1"},
		{[]string{"-m", "x", "-ub", "zero"}, "positive"},
		{[]string{"-m", "x", "--chat-template", "chatml", "--chat-template-file", "f.jinja"}, "not both"},
		{[]string{"-m", "x", "--context-shift"}, "-c"},
		{[]string{"-m", "x", "-mg", "1"}, "CUDA_VISIBLE_DEVICES"},
		{[]string{"-m", "x", "-ts", "3,1"}, "one GPU"},
		{[]string{"-m", "x", "--lora", "a.gguf"}, "LoRA"},
		{[]string{"-m", "x", "--rope-freq-base", "10000"}, "GGUF"},
		{[]string{"-m", "x", "--ssl-key-file", "k.pem"}, "TLS"},
		{[]string{"-m", "x", "--api-key", "a", "--api-key-file", "f"}, "not both"},
	}
	for _, tt := range tests {
		_, err := parseServe(tt.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: error %v, want one that mentions %q", tt.args, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "not defined") {
			t.Errorf("%v: %v", tt.args, err)
		}
	}
}

func TestAPIKeyNeverPrinted(t *testing.T) {
	const key = "sk-test-d41d8cd98f00b204"
	t.Setenv("LLMSERVE_API_KEY", key)
	for _, args := range [][]string{{"--help"}, {"--no-such-flag"}, {"--port", "x"}, {"-m", "x", "--timeout", "soon"}} {
		var out bytes.Buffer
		_, err := parseServe(args, &out)
		if err == nil {
			t.Errorf("%v: no error", args)
		}
		if out.Len() == 0 {
			t.Errorf("%v: printed nothing", args)
		}
		if strings.Contains(out.String(), key) || (err != nil && strings.Contains(err.Error(), key)) {
			t.Errorf("%v: the key is in the output:\n%s", args, out.String())
		}
	}
	o, err := parseServe([]string{"-m", "x"}, io.Discard)
	if err != nil || o.apiKey != key {
		t.Errorf("the key from the environment: %q, %v", o.apiKey, err)
	}
	o, err = parseServe([]string{"-m", "x", "--api-key", "flag"}, io.Discard)
	if err != nil || o.apiKey != "flag" {
		t.Errorf("--api-key over the environment: %q, %v", o.apiKey, err)
	}
	if errors.Is(err, flag.ErrHelp) {
		t.Errorf("help")
	}
}

func TestAPIKeyFile(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, content string
		want          string // the key; "": an error
	}{
		{"one key", "\n  sk-one  \n\n", "sk-one"},
		{"two keys", "sk-one\nsk-two\n", ""},
		{"empty", "\n", ""},
	}
	for _, tt := range tests {
		path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-"))
		if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
			t.Fatal(err)
		}
		o, err := parseServe([]string{"-m", "x", "--api-key-file", path}, io.Discard)
		switch {
		case tt.want == "" && err == nil:
			t.Errorf("%s: accepted, key %q", tt.name, o.apiKey)
		case tt.want == "" && strings.Contains(err.Error(), "sk-"):
			t.Errorf("%s: the error quotes a key: %v", tt.name, err)
		case tt.want != "" && (err != nil || o.apiKey != tt.want):
			t.Errorf("%s: key %q, %v; want %q", tt.name, o.apiKey, err, tt.want)
		}
	}
	if _, err := parseServe([]string{"-m", "x", "--api-key-file", filepath.Join(dir, "none")}, io.Discard); err == nil {
		t.Errorf("a missing key file: accepted")
	}
}

func TestLogFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "serve.log")
	o, err := parseServe([]string{"-m", "x", "--log-file", path}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	log, closeLog, err := serveLogger(&o)
	if err != nil {
		t.Fatal(err)
	}
	log.Info().Msg("hello")
	log.Debug().Msg("hidden")
	closeLog()
	data, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(data), "hello") || strings.Contains(string(data), "hidden") {
		t.Errorf("log file %q (%v): want the info line only", data, err)
	}
}

func TestChatTemplateFlag(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "t.jinja")
	if err := os.WriteFile(file, []byte("{% for m in messages %}<{{ m.content }}>{% endfor %}"), 0o644); err != nil {
		t.Fatal(err)
	}
	noTags := filepath.Join(dir, "plain.txt")
	if err := os.WriteFile(noTags, []byte("chatml"), 0o644); err != nil {
		t.Fatal(err)
	}
	msgs := []chat.Message{{Role: "user", Content: "hi"}}
	tests := []struct {
		name    string
		args    []string
		want    string // in the rendered prompt; "": an error
		wantErr string
	}{
		{"built-in name", []string{"--chat-template", "llama3"}, "<|start_header_id|>user", ""},
		{"raw Jinja", []string{"--chat-template", "{{ messages[0].content }}!"}, "hi!", ""},
		{"file", []string{"--chat-template-file", file}, "<hi>", ""},
		{"unknown name", []string{"--chat-template", "nosuch"}, "", "chatml"},
		{"broken Jinja", []string{"--chat-template", "{% for %}"}, "", "--chat-template"},
		{"missing file", []string{"--chat-template-file", filepath.Join(dir, "none")}, "", "--chat-template-file"},
		{"file without tags", []string{"--chat-template-file", noTags}, "", "no Jinja"},
	}
	for _, tt := range tests {
		o, err := parseServe(append([]string{"-m", "x"}, tt.args...), io.Discard)
		var tmpl *chat.Template
		if err == nil {
			tmpl, err = chatTemplate(o.chatTemplate, "{{ 'own' }}", zerolog.Nop())
		}
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: error %v, want one with %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		got, err := tmpl.Render(msgs, chat.Options{AddGenerationPrompt: true})
		if err != nil || !strings.Contains(got, tt.want) {
			t.Errorf("%s: rendered %q (%v), want %q in it", tt.name, got, err, tt.want)
		}
	}
}
