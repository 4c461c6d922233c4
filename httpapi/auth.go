package httpapi

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// auth checks the API key, when one is configured, before any routing,
// so that a client without the key cannot tell a route from a missing
// one; /health and the chat page's files stay open (they hold no data:
// the page asks for the key when the API answers 401). The key comes as
// 'Authorization: Bearer KEY' (the scheme in any case) or as
// 'X-Api-Key: KEY', as llama.cpp's server takes it.
func (s *Server) auth(next http.Handler) http.Handler {
	if s.cfg.APIKey == "" {
		return next
	}
	want := []byte(s.cfg.APIKey)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" || s.isPageRequest(r) {
			next.ServeHTTP(w, r)
			return
		}
		if subtle.ConstantTimeCompare([]byte(presentedKey(r)), want) != 1 {
			w.Header().Set("WWW-Authenticate", "Bearer")
			writeError(w, errUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// presentedKey returns the key a request carries, or "".
func presentedKey(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, token, ok := strings.Cut(strings.TrimSpace(h), " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(token)
		}
		return ""
	}
	return strings.TrimSpace(r.Header.Get("X-Api-Key"))
}
