package httpapi

import (
	"net/http"
	"runtime"
	"runtime/debug"
)

// propsJSON is GET /props in llama-server's shape: what a client (the chat
// page among them) needs to know about the server before it asks anything.
type propsJSON struct {
	DefaultGenerationSettings genSettingsJSON `json:"default_generation_settings"`
	TotalSlots                int             `json:"total_slots"`
	ModelPath                 string          `json:"model_path"`
	ModelAlias                string          `json:"model_alias"`
	ChatTemplate              string          `json:"chat_template"`
	BOSToken                  string          `json:"bos_token"`
	EOSToken                  string          `json:"eos_token"`
	Modalities                map[string]bool `json:"modalities"`
	BuildInfo                 string          `json:"build_info"`
}

// genSettingsJSON is llama-server's default_generation_settings: one slot's
// context and the parameters of requests that leave them out.
type genSettingsJSON struct {
	NCtx         int            `json:"n_ctx"`
	IsProcessing bool           `json:"is_processing"`
	Params       genDefaultJSON `json:"params"`
}

// genDefaultJSON lists the defaults GenDefaults sets; -1 for n_predict and
// seed means until the context is full and a random seed per request.
type genDefaultJSON struct {
	NPredict    int     `json:"n_predict"`
	Temperature float32 `json:"temperature"`
	TopK        int     `json:"top_k"`
	TopP        float32 `json:"top_p"`
	Seed        int64   `json:"seed"`
}

// props answers GET /props, or 503 while the model loads.
func (s *Server) props(w http.ResponseWriter, r *http.Request) {
	m, err := s.loaded()
	if err != nil {
		writeError(w, err)
		return
	}
	tmpl := ""
	if m.Chat != nil {
		tmpl = m.Chat.Template().Source()
	}
	var bos, eos string
	if m.Tokenizer != nil {
		bos, eos = tokenText(m.Tokenizer, m.Tokenizer.BOS()), tokenText(m.Tokenizer, m.Tokenizer.EOS())
	}
	writeJSON(w, http.StatusOK, propsJSON{
		DefaultGenerationSettings: genSettingsJSON{
			NCtx:   m.Scheduler.ContextSize(),
			Params: s.defaultParams(),
		},
		TotalSlots:   m.Scheduler.NumSlots(),
		ModelPath:    s.cfg.ModelPath,
		ModelAlias:   s.cfg.ModelName,
		ChatTemplate: tmpl,
		BOSToken:     bos,
		EOSToken:     eos,
		Modalities:   map[string]bool{"vision": false, "audio": false},
		BuildInfo:    buildInfo(),
	})
}

// tokenText is a special token's text, or "" when the model has none.
func tokenText(t Tokenizer, id int32) string {
	if id < 0 || int(id) >= t.VocabSize() {
		return ""
	}
	return t.TokenText(id)
}

// defaultParams is what a request that sets nothing gets (llama.cpp's
// defaults unless the flags changed them).
func (s *Server) defaultParams() genDefaultJSON {
	d := s.cfg.Defaults
	p := genDefaultJSON{NPredict: -1, Temperature: 0.8, TopK: 40, TopP: 0.95, Seed: -1}
	if d.MaxTokens > 0 {
		p.NPredict = d.MaxTokens
	}
	if d.Temperature != nil {
		p.Temperature = *d.Temperature
	}
	if d.TopK != nil {
		p.TopK = *d.TopK
	}
	if d.TopP != nil {
		p.TopP = *d.TopP
	}
	if d.Seed != nil {
		p.Seed = *d.Seed
	}
	return p
}

// buildInfo names the build: the module's version (and commit, when the
// binary was built with VCS stamping) and the Go release.
func buildInfo() string {
	version, commit := "(devel)", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		for _, kv := range bi.Settings {
			if kv.Key == "vcs.revision" && len(kv.Value) >= 7 {
				commit = "-" + kv.Value[:7]
			}
		}
	}
	return "llmserve " + version + commit + " " + runtime.Version()
}
