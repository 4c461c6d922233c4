// Package httpapi serves a model over an OpenAI-style HTTP API: completions,
// chat completions (streamed as server-sent events or not), model listing,
// health, metrics and tokenization. Handlers validate a request, translate
// it into a decode.Request and hand it to the scheduler; one function maps
// every error to its OpenAI-style JSON form.
package httpapi

import (
	"crypto/subtle"
	"io"
	"net/http"
	"strings"
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
	Chat      *chat.Template // renders chat messages into a prompt
	Created   time.Time      // when the model was loaded
}

// Config configures a Server.
type Config struct {
	ModelName    string         // the served model's id, known before it loads
	APIKey       string         // when set, every route but /health needs 'Authorization: Bearer APIKey'
	CORSOrigins  []string       // origins allowed to call from a browser ("*" for any); none: no CORS headers
	MaxBodyBytes int64          // largest request body; 0: 4 MiB
	Timeout      time.Duration  // longest a generation request may run; 0: no limit
	BodyTimeout  time.Duration  // longest a client may take to send a request body; 0: 30 s
	Defaults     GenDefaults    // generation parameters of requests that do not set them
	Logger       zerolog.Logger // one line per request
}

// Server is the HTTP API. It answers /health with 503 until SetModel.
type Server struct {
	cfg     Config
	model   atomic.Pointer[Model] // nil while loading
	metrics httpMetrics
	router  chi.Router
}

// New builds the server's routes.
func New(cfg Config) *Server {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 4 << 20
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = 30 * time.Second
	}
	s := &Server{cfg: cfg, metrics: newHTTPMetrics()}
	r := chi.NewRouter()
	r.Use(s.logRequests, s.cors)
	r.Get("/health", s.health)
	r.Group(func(r chi.Router) {
		r.Use(s.auth, s.limitBody)
		r.Get("/metrics", s.serveMetrics)
		r.Get("/v1/models", s.models)
		r.Post("/v1/completions", s.completions)
		r.Post("/v1/chat/completions", s.chatCompletions)
		r.Post("/tokenize", s.tokenize)
		r.Post("/detokenize", s.detokenize)
	})
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error",
			Message: "no route " + r.Method + " " + r.URL.Path})
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{Status: http.StatusMethodNotAllowed, Type: "invalid_request_error",
			Message: "method " + r.Method + " is not allowed on " + r.URL.Path})
	})
	s.router = r
	return s
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

// auth checks the Bearer key when one is configured.
func (s *Server) auth(next http.Handler) http.Handler {
	if s.cfg.APIKey == "" {
		return next
	}
	want := []byte("Bearer " + s.cfg.APIKey)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			writeError(w, errUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// limitBody caps the request body's size and the time its bytes may take
// to arrive. The read deadline is lifted as soon as the body has been read,
// so it never touches a response stream (net/http cancels a request's
// context when a read deadline passes).
func (s *Server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			if rc.SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout)) == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
			}
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
		next.ServeHTTP(w, r)
	})
}

// deadlineBody lifts the connection's read deadline once the body has
// been read to its end. After any other error the deadline stays, so the
// server's own attempt to drain an unread body cannot hang either.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool // the deadline has been lifted
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// cors adds CORS headers for allowed origins and answers preflights.
func (s *Server) cors(next http.Handler) http.Handler {
	if len(s.cfg.CORSOrigins) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin != "" && s.originAllowed(origin) {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Add("Vary", "Origin")
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
				h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
				h.Set("Access-Control-Max-Age", "600")
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) originAllowed(origin string) bool {
	for _, o := range s.cfg.CORSOrigins {
		if o == "*" || strings.EqualFold(o, origin) {
			return true
		}
	}
	return false
}
