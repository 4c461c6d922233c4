package httpapi

import (
	"io"
	"io/fs"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
)

// get fetches path with the key when withKey, and returns the response
// with its body read.
func get(t *testing.T, e *testEnv, path string, withKey bool) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("GET", e.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if withKey && e.key != "" {
		req.Header.Set("Authorization", "Bearer "+e.key)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// ownPage is a folder a user serves with --webui-path.
var ownPage = fstest.MapFS{
	"index.html":     {Data: []byte("<h1>my own page</h1>")},
	"sub/index.html": {Data: []byte("<p>sub page</p>")},
	"app.js":         {Data: []byte("console.log('mine')")},
	".env":           {Data: []byte("SECRET=1")},
	".git/config":    {Data: []byte("[core]")},
	"props":          {Data: []byte("a file named like a route")},
	"slots":          {Data: []byte("a file named like a route")},
}

// TestPageRoutes checks what / and the page's files answer with the
// built-in page, with --no-webui and with --webui-path, and that API
// routes keep answering as before.
func TestPageRoutes(t *testing.T) {
	builtin := func(*Config) {}
	off := func(c *Config) { c.NoWebUI = true }
	own := func(c *Config) { c.WebUI = ownPage }
	tests := []struct {
		name   string
		config func(*Config)
		method string
		path   string
		status int
		ctype  string // prefix of Content-Type
		body   string // substring of the body
	}{
		{"built-in index", builtin, "GET", "/", 200, "text/html", `<script src="app.js" defer></script>`},
		{"built-in index.html", builtin, "GET", "/index.html", 200, "text/html", `<script src="markdown.js" defer></script>`},
		{"built-in script", builtin, "GET", "/app.js", 200, "text/javascript", "/v1/chat/completions"},
		{"built-in markdown", builtin, "GET", "/markdown.js", 200, "text/javascript", "escapeHTML"},
		{"built-in style", builtin, "GET", "/style.css", 200, "text/css", "@media (max-width: 760px)"},
		{"built-in icon", builtin, "GET", "/favicon.svg", 200, "image/svg+xml", "<svg"},
		{"built-in missing file", builtin, "GET", "/nothing.js", 404, "application/json", "no route GET /nothing.js"},
		{"built-in POST /", builtin, "POST", "/", 404, "application/json", "no route POST /"},
		{"built-in HEAD /", builtin, "HEAD", "/", 200, "text/html", ""},
		{"API route still 405", builtin, "GET", "/v1/completions", 405, "application/json", "not allowed"},
		{"props beside the page", builtin, "GET", "/props", 200, "application/json", "default_generation_settings"},
		{"off: /", off, "GET", "/", 404, "application/json", "no route GET /"},
		{"off: script", off, "GET", "/app.js", 404, "application/json", "no route"},
		{"off: props stays", off, "GET", "/props", 200, "application/json", "total_slots"},
		{"own: /", own, "GET", "/", 200, "text/html", "my own page"},
		{"own: folder index", own, "GET", "/sub/", 200, "text/html", "sub page"},
		{"own: script", own, "GET", "/app.js", 200, "text/javascript", "mine"},
		{"own: no built-in file", own, "GET", "/markdown.js", 404, "application/json", "no route"},
		{"own: dotfile", own, "GET", "/.env", 404, "application/json", "no route"},
		{"own: dot folder", own, "GET", "/.git/config", 404, "application/json", "no route"},
		{"own: a file named props", own, "GET", "/props", 200, "application/json", "default_generation_settings"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, envOptions{config: tt.config})
			req, err := http.NewRequest(tt.method, e.srv.URL+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			client := *e.srv.Client()
			client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %.200s", resp.StatusCode, tt.status, b)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, tt.ctype) {
				t.Errorf("Content-Type %q, want %s...", ct, tt.ctype)
			}
			if !strings.Contains(string(b), tt.body) {
				t.Errorf("body lacks %q: %.300s", tt.body, b)
			}
		})
	}
}

// TestPageHeaders checks the strict headers of the built-in page, and
// that a folder of the user's own gets only those that cannot break it.
func TestPageHeaders(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, path := range []string{"/", "/app.js", "/style.css"} {
		resp, _ := get(t, e, path, false)
		h := resp.Header
		want := map[string]string{
			"Content-Security-Policy": pageCSP,
			"X-Content-Type-Options":  "nosniff",
			"X-Frame-Options":         "DENY",
			"Referrer-Policy":         "no-referrer",
		}
		for k, v := range want {
			if got := h.Get(k); got != v {
				t.Errorf("%s: %s = %q, want %q", path, k, got, v)
			}
		}
	}
	for _, directive := range []string{"default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(pageCSP, directive) {
			t.Errorf("the policy lacks %s", directive)
		}
	}
	if strings.Contains(pageCSP, "unsafe-inline") || strings.Contains(pageCSP, "unsafe-eval") {
		t.Errorf("the policy allows inline script or eval: %s", pageCSP)
	}
	own := newEnv(t, envOptions{config: func(c *Config) { c.WebUI = ownPage }})
	resp, _ := get(t, own, "/", false)
	if csp := resp.Header.Get("Content-Security-Policy"); csp != "" {
		t.Errorf("a folder of the user's own got the built-in policy %q", csp)
	}
	if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("X-Content-Type-Options %q on the user's own page", got)
	}
}

// TestPageHasNoInlineCode checks that the built-in page works under its
// own policy: no inline script, event handler attribute or style
// attribute, and no address outside the server.
func TestPageHasNoInlineCode(t *testing.T) {
	page, err := fs.Sub(builtinPage, "webui")
	if err != nil {
		t.Fatal(err)
	}
	html, err := fs.ReadFile(page, "index.html")
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		what string
		re   *regexp.Regexp
	}{
		{"inline script", regexp.MustCompile(`<script(\s[^>]*)?>\s*[^<\s]`)},
		{"event handler attribute", regexp.MustCompile(`(?i)\son[a-z]+\s*=`)},
		{"style attribute", regexp.MustCompile(`(?i)\sstyle\s*=`)},
		{"style element", regexp.MustCompile(`(?i)<style`)},
	}
	scripts := regexp.MustCompile(`(?i)<script[^>]*>`).FindAll(html, -1)
	if len(scripts) != 2 {
		t.Errorf("index.html has %d script tags, want 2 (markdown.js and app.js)", len(scripts))
	}
	for _, tag := range scripts {
		if !regexp.MustCompile(`\ssrc="[a-z]+\.js"`).Match(tag) {
			t.Errorf("index.html has a script tag without a file of its own: %s", tag)
		}
	}
	for _, c := range checks {
		if m := c.re.Find(html); m != nil {
			t.Errorf("index.html has an %s: %s", c.what, m)
		}
	}
	remote := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}[/"']`)
	err = fs.WalkDir(page, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(page, name)
		if err != nil {
			return err
		}
		for _, m := range remote.FindAll(b, -1) {
			if !strings.Contains(string(m), "//www.w3.org/") { // the SVG namespace, never fetched
				t.Errorf("%s refers to another site: %s", name, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPageAuth checks that with --api-key the page's own files load
// without the key (the page asks for it), while /props, /slots and every
// other route need it, a folder's file named like a route included.
func TestPageAuth(t *testing.T) {
	tests := []struct {
		name   string
		config func(*Config)
		path   string
		noKey  int // status without the key
		key    int // status with it
	}{
		{"page", nil, "/", 200, 200},
		{"page script", nil, "/app.js", 200, 200},
		{"props", nil, "/props", 401, 200},
		{"slots", nil, "/slots", 401, 200},
		{"missing file", nil, "/nothing.js", 401, 404},
		{"off: /", func(c *Config) { c.NoWebUI = true }, "/", 401, 404},
		{"own: /", func(c *Config) { c.WebUI = ownPage }, "/", 200, 200},
		{"own: a file named props", func(c *Config) { c.WebUI = ownPage }, "/props", 401, 200},
		{"own: a file named slots", func(c *Config) { c.WebUI = ownPage }, "/slots", 401, 200},
		{"own: dotfile", func(c *Config) { c.WebUI = ownPage }, "/.env", 401, 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, envOptions{key: "sekret", config: tt.config})
			if resp, body := get(t, e, tt.path, false); resp.StatusCode != tt.noKey {
				t.Errorf("without the key: status %d, want %d: %.200s", resp.StatusCode, tt.noKey, body)
			}
			if resp, body := get(t, e, tt.path, true); resp.StatusCode != tt.key {
				t.Errorf("with the key: status %d, want %d: %.200s", resp.StatusCode, tt.key, body)
			}
		})
	}
}

// TestPageFile checks the mapping of URL paths to page files.
func TestPageFile(t *testing.T) {
	s := New(Config{WebUI: ownPage})
	tests := []struct{ path, want string }{
		{"/", "index.html"},
		{"/app.js", "app.js"},
		{"/sub", "sub/index.html"},
		{"/sub/", "sub/index.html"},
		{"/../app.js", "app.js"}, // cleaned to /app.js, inside the folder
		{"/sub/../../../etc/passwd", ""},
		{"/.env", ""},
		{"/sub/.hidden", ""},
		{"/.git/config", ""},
		{"/missing", ""},
		{"relative", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := s.pageFile(tt.path); got != tt.want {
			t.Errorf("pageFile(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
	if got := New(Config{NoWebUI: true}).pageFile("/"); got != "" {
		t.Errorf("with the page off, pageFile(/) = %q", got)
	}
}
