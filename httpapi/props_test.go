package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestProps checks GET /props against what the server was given: the
// slot context, slots, model path and alias, template, defaults, build.
func TestProps(t *testing.T) {
	temp, seed := float32(0.25), int64(7)
	e := newEnv(t, envOptions{ctx: 128, slots: 3, config: func(c *Config) {
		c.ModelPath = "/models/fake.gguf"
		c.Defaults = GenDefaults{MaxTokens: 64, Temperature: &temp, Seed: &seed}
	}})
	code, body := e.do(t, "GET", "/props", "")
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	var p propsJSON
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	want := genSettingsJSON{NCtx: 128, Params: genDefaultJSON{NPredict: 64, Temperature: 0.25, TopK: 40, TopP: 0.95, Seed: 7}}
	if p.DefaultGenerationSettings != want {
		t.Errorf("default_generation_settings %+v, want %+v", p.DefaultGenerationSettings, want)
	}
	if p.TotalSlots != 3 || p.ModelPath != "/models/fake.gguf" || p.ModelAlias != "fake" {
		t.Errorf("total_slots %d, model_path %q, model_alias %q", p.TotalSlots, p.ModelPath, p.ModelAlias)
	}
	if p.ChatTemplate != "chatml" {
		t.Errorf("chat_template %q, want the built-in format's name chatml", p.ChatTemplate)
	}
	if !strings.HasPrefix(p.BuildInfo, "llmserve ") || !strings.Contains(p.BuildInfo, " go") {
		t.Errorf("build_info %q", p.BuildInfo)
	}
	if p.BOSToken == "" || p.EOSToken == "" {
		t.Errorf("bos_token %q, eos_token %q", p.BOSToken, p.EOSToken)
	}
	// Every llama-server key a client reads is present.
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"default_generation_settings", "total_slots", "model_path", "chat_template", "build_info", "modalities"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("no %q in %s", k, body)
		}
	}
}

// TestPropsDefaults checks the llama.cpp defaults when no flag sets them.
func TestPropsDefaults(t *testing.T) {
	e := newEnv(t, envOptions{})
	var p propsJSON
	code, body := e.do(t, "GET", "/props", "")
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatal(err)
	}
	want := genDefaultJSON{NPredict: -1, Temperature: 0.8, TopK: 40, TopP: 0.95, Seed: -1}
	if got := p.DefaultGenerationSettings.Params; got != want {
		t.Errorf("params %+v, want %+v", got, want)
	}
}

// TestPropsAndSlotsWhileLoading checks that both answer 503 model_loading
// before the model is there.
func TestPropsAndSlotsWhileLoading(t *testing.T) {
	e := newEnv(t, envOptions{notLoaded: true})
	for _, path := range []string{"/props", "/slots"} {
		code, body := e.do(t, "GET", path, "")
		if code != http.StatusServiceUnavailable || errorOf(t, body).Code != "model_loading" {
			t.Errorf("%s: status %d: %s", path, code, body)
		}
	}
}
