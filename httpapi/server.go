// Package httpapi serves a model over an OpenAI-style HTTP API: completions,
// chat completions (streamed as server-sent events or not), model listing,
// health, metrics, tokenization, llama-server's /props and /slots, and a
// chat page at / (webui.go). Handlers validate a request, translate
// it into a decode.Request and hand it to the scheduler; one function maps
// every error to its OpenAI-style JSON form.
package httpapi

import (
	"io/fs"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/rs/zerolog"

	"llmserve/decode"
	"llmserve/model/chat"
)

// Tokenizer is what the API needs from a tokenizer.
type Tokenizer interface {
	Encode(text string, addSpecial, parseSpecial bool) ([]int32, error)
	Decode(ids []int32) string
	TokenBytes(id int32) []byte
	TokenText(id int32) string
	BOS() int32
	EOS() int32
	VocabSize() int
}

// Model is a loaded model ready to serve.
type Model struct {
	Name      string            // the id clients use in "model"
	Scheduler *decode.Scheduler // runs the requests
	Tokenizer Tokenizer
	Chat      *chat.Renderer // renders chat messages into a prompt, within bounds
	Created   time.Time      // when the model was loaded
}

// Config configures a Server.
type Config struct {
	ModelName    string         // the served model's id, known before it loads
	APIKey       string         // when set, every route but /health needs 'Authorization: Bearer APIKey' or 'X-Api-Key: APIKey'
	CORSOrigins  []string       // origins allowed to call from a browser ("*" for any); none: no CORS headers
	MaxBodyBytes int64          // largest request body; 0: 4 MiB
	Timeout      time.Duration  // longest a generation request may run; 0: no limit
	BodyTimeout  time.Duration  // longest a client may take to send a request body; 0: 30 s
	Defaults     GenDefaults    // generation parameters of requests that do not set them
	Logger       zerolog.Logger // one line per request
	ModelPath    string         // the model's file, for /props
	NoWebUI      bool           // GET / answers 404: no chat page
	WebUI        fs.FS          // files to serve at / instead of the built-in chat page; nil: the built-in one
	NoSlots      bool           // GET /slots answers 501, as llama-server's --no-slots
}

// Server is the HTTP API. It answers /health with 503 until SetModel.
type Server struct {
	cfg     Config
	model   atomic.Pointer[Model] // nil while loading
	metrics httpMetrics
	conns   atomic.Int64 // connections open through Listener
	router  chi.Router
	page    fs.FS        // the files served at / (webui.go); nil: no page
	grammar grammarCache // compiled grammars of the loaded model (grammarcache.go)
}

// New builds the server's routes.
func New(cfg Config) *Server {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 4 << 20
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = 30 * time.Second
	}
	s := &Server{cfg: cfg, metrics: newHTTPMetrics(), page: cfg.pageFiles()}
	r := chi.NewRouter()
	// The order matters: a panic anywhere ends in a 500; every body is
	// bounded, on every route; a preflight needs no key; the key is
	// checked before the routes, so 404 and 405 need it too.
	r.Use(s.recoverPanics, s.guardBody, s.logRequests, s.cors, s.auth)
	r.Get("/health", s.healthRetry)
	r.Get("/metrics", s.serveMetrics)
	r.Get("/v1/models", s.models)
	r.Get("/v1/models/*", s.modelInfo)
	r.Get("/props", s.props)
	r.Get("/slots", s.slots)
	r.Group(func(r chi.Router) {
		r.Use(s.readBody)
		r.Post("/v1/completions", s.completions)
		r.Post("/v1/chat/completions", s.chatCompletions)
		r.Post("/tokenize", s.tokenize)
		r.Post("/detokenize", s.detokenize)
	})
	r.NotFound(s.webui) // the chat page's files, else a JSON 404
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{Status: http.StatusMethodNotAllowed, Type: "invalid_request_error",
			Message: "method " + r.Method + " is not allowed on " + r.URL.Path})
	})
	s.router = r
	return s
}

// healthRetry is health, with the time to retry while the model loads.
func (s *Server) healthRetry(w http.ResponseWriter, r *http.Request) {
	if s.model.Load() == nil {
		w.Header().Set("Retry-After", retryLoading)
	}
	s.health(w, r)
}

// Handler returns the HTTP handler.
func (s *Server) Handler() http.Handler { return s.router }

// SetModel marks the model loaded: /health turns 200 and /v1 serves it.
func (s *Server) SetModel(m *Model) { s.model.Store(m) }

// loaded returns the model, or errLoading.
func (s *Server) loaded() (*Model, error) {
	m := s.model.Load()
	if m == nil {
		return nil, errLoading
	}
	return m, nil
}
