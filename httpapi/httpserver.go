package httpapi

import (
	"log"
	"net/http"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// Connection limits of the http.Server that HTTPServer builds.
const (
	readHeaderTimeout = 10 * time.Second // request line and headers
	idleTimeout       = 60 * time.Second // a kept-alive connection between requests
	maxHeaderBytes    = 64 << 10         // request line and headers, in bytes
)

// HTTPServer returns an http.Server for the API with bounded header
// reading, idle connections and header size; request bodies are bounded
// by Config.BodyTimeout and MaxBodyBytes. It has no ReadTimeout or
// WriteTimeout: once passed, net/http cancels the request's context,
// which would cut streams that outlive them. Serve it on Listener(ln).
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          log.New(logWriter{s.cfg.Logger}, "", 0),
	}
}

// logWriter turns net/http's own log lines into warnings.
type logWriter struct{ log zerolog.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.log.Warn().Msg(strings.TrimSpace(string(p)))
	return len(p), nil
}
