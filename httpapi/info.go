package httpapi

import (
	"net/http"
	"time"
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
	created := time.Now()
	if m := s.model.Load(); m != nil {
		created = m.Created
	}
	writeJSON(w, http.StatusOK, struct {
		Object string      `json:"object"`
		Data   []modelJSON `json:"data"`
	}{"list", []modelJSON{{ID: s.cfg.ModelName, Object: "model", Created: created.Unix(), OwnedBy: "llmserve"}}})
}
