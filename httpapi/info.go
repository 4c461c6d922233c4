package httpapi

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
)

// health answers 503 {"status":"loading"} until the model is loaded, then 200 {"status":"ok"}.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	if s.model.Load() == nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "loading"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

type modelJSON struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// models lists the served model.
func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, struct {
		Object string      `json:"object"`
		Data   []modelJSON `json:"data"`
	}{"list", []modelJSON{s.servedModel()}})
}

// modelInfo answers GET /v1/models/{id}: the served model, or 404
// model_not_found for any other id. Ids may hold slashes ("org/name").
func (s *Server) modelInfo(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "*")
	if id != s.cfg.ModelName {
		writeError(w, unknownModel{name: id, served: s.cfg.ModelName})
		return
	}
	writeJSON(w, http.StatusOK, s.servedModel())
}

// servedModel describes the served model; before it has loaded, its
// creation time is now.
func (s *Server) servedModel() modelJSON {
	created := time.Now()
	if m := s.model.Load(); m != nil {
		created = m.Created
	}
	return modelJSON{ID: s.cfg.ModelName, Object: "model", Created: created.Unix(), OwnedBy: "llmserve"}
}
