package httpapi

import (
	"embed"
	"errors"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
)

// builtinPage is the chat page served at /: plain HTML, CSS and JavaScript,
// no build step, nothing fetched from elsewhere.
//
//go:embed webui/index.html webui/app.js webui/markdown.js webui/style.css webui/favicon.svg
var builtinPage embed.FS

// pageCSP is the Content-Security-Policy of the built-in page: its own
// scripts and styles only (no inline script, no eval), requests to this
// server only, and no framing.
const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// pageFiles returns the files served at /: the built-in page, the folder
// Config.WebUI names, or nil when the page is off.
func (c Config) pageFiles() fs.FS {
	switch {
	case c.NoWebUI:
		return nil
	case c.WebUI != nil:
		return c.WebUI
	}
	sub, err := fs.Sub(builtinPage, "webui")
	if err != nil { // cannot happen: the folder is embedded
		return nil
	}
	return sub
}

// pageFile maps a URL path to the name of a page file, or "" when the path
// names no file there: "/" is index.html, and no part of the path may start
// with a dot (a folder's .git or .env is never served).
func (s *Server) pageFile(urlPath string) string {
	if s.page == nil || !strings.HasPrefix(urlPath, "/") {
		return ""
	}
	name := strings.TrimPrefix(path.Clean(urlPath), "/")
	if name == "" {
		name = "index.html"
	}
	if !fs.ValidPath(name) {
		return ""
	}
	for part := range strings.SplitSeq(name, "/") {
		if strings.HasPrefix(part, ".") {
			return ""
		}
	}
	st, err := fs.Stat(s.page, name)
	if err == nil && st.IsDir() {
		name = path.Join(name, "index.html")
		st, err = fs.Stat(s.page, name)
	}
	if err != nil || !st.Mode().IsRegular() {
		return ""
	}
	return name
}

// webui answers the requests no route takes: a GET (or HEAD) of one of the page's
// files is served; anything else is the JSON 404 of the API.
func (s *Server) webui(w http.ResponseWriter, r *http.Request) {
	name := ""
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		name = s.pageFile(r.URL.Path)
	}
	if name == "" {
		s.notFound(w, r)
		return
	}
	f, err := s.page.Open(name)
	if err != nil {
		s.notFound(w, r)
		return
	}
	defer f.Close()
	rs, ok := f.(io.ReadSeeker)
	if !ok {
		writeError(w, errors.New("page file "+name+" cannot seek"))
		return
	}
	h := w.Header()
	if ct := mime.TypeByExtension(path.Ext(name)); ct != "" {
		h.Set("Content-Type", ct)
	}
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	if s.cfg.WebUI == nil {
		h.Set("Content-Security-Policy", pageCSP)
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
	}
	var mod time.Time
	if st, err := f.Stat(); err == nil {
		mod = st.ModTime()
	}
	http.ServeContent(w, r, name, mod, rs)
}

// notFound is the JSON 404 of every unknown route.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	writeError(w, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error",
		Message: "no route " + r.Method + " " + clip(r.URL.Path, 200)})
}

// isPageRequest reports whether r is a GET or HEAD that no route takes and that
// names one of the page's files: only those are served without the API
// key, so that a page folder's file named like a route (props, slots)
// never opens that route.
func (s *Server) isPageRequest(r *http.Request) bool {
	if (r.Method != http.MethodGet && r.Method != http.MethodHead) || s.page == nil {
		return false
	}
	if s.router.Match(chi.NewRouteContext(), r.Method, r.URL.Path) {
		return false
	}
	return s.pageFile(r.URL.Path) != ""
}

// clip shortens s to at most n bytes (on a rune boundary) for a message,
// marking the cut with "…".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
