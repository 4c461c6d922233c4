package httpapi

import (
	"net/http"
	"strings"
)

// corsBaseHeaders are allowed on every preflight, whatever it asks for.
const corsBaseHeaders = "Authorization, Content-Type, X-Api-Key"

// cors adds CORS headers for allowed origins and answers preflights. A
// preflight's Access-Control-Request-Headers are allowed as asked (the
// official SDKs send their own x-stainless-* headers), once checked to be
// header names.
func (s *Server) cors(next http.Handler) http.Handler {
	if len(s.cfg.CORSOrigins) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" || !s.originAllowed(origin) {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
		if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
			h.Set("Access-Control-Expose-Headers", "X-Request-Id, Retry-After")
			next.ServeHTTP(w, r)
			return
		}
		h.Add("Vary", "Access-Control-Request-Method, Access-Control-Request-Headers")
		h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
		h.Set("Access-Control-Allow-Headers", allowedHeaders(r.Header.Values("Access-Control-Request-Headers")))
		h.Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
	})
}

// allowedHeaders returns the base headers and those requested that are
// well-formed header names.
func allowedHeaders(requested []string) string {
	var b strings.Builder
	b.WriteString(corsBaseHeaders)
	seen := map[string]bool{"authorization": true, "content-type": true, "x-api-key": true}
	for _, v := range requested {
		for name := range strings.SplitSeq(v, ",") {
			name = strings.TrimSpace(name)
			low := strings.ToLower(name)
			if !isToken(name) || seen[low] {
				continue
			}
			seen[low] = true
			b.WriteString(", ")
			b.WriteString(low)
		}
	}
	return b.String()
}

// isToken reports whether s is an HTTP token (RFC 9110), as header names are.
func isToken(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

func (s *Server) originAllowed(origin string) bool {
	for _, o := range s.cfg.CORSOrigins {
		if o == "*" || strings.EqualFold(o, origin) {
			return true
		}
	}
	return false
}
