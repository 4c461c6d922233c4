package httpapi

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestAuthBeforeRouting checks that with a key set every route but
// /health answers 401 without it, existing or not, and that the key is
// taken in the forms llama.cpp's server takes.
func TestAuthBeforeRouting(t *testing.T) {
	e := newEnv(t, envOptions{key: "sekret"})
	tests := []struct {
		name, method, path string
		header             [2]string // name, value
		status             int
	}{
		{"no key, real route", "GET", "/v1/models", [2]string{}, 401},
		{"no key, no route", "GET", "/v1/nothing", [2]string{}, 401},
		{"no key, wrong method", "DELETE", "/v1/completions", [2]string{}, 401},
		{"no key, metrics", "GET", "/metrics", [2]string{}, 401},
		{"no key, health", "GET", "/health", [2]string{}, 200},
		{"wrong key", "GET", "/v1/models", [2]string{"Authorization", "Bearer nope"}, 401},
		{"key as Basic", "GET", "/v1/models", [2]string{"Authorization", "Basic sekret"}, 401},
		{"bare key", "GET", "/v1/models", [2]string{"Authorization", "sekret"}, 401},
		{"empty bearer", "GET", "/v1/models", [2]string{"Authorization", "Bearer "}, 401},
		{"key with a suffix", "GET", "/v1/models", [2]string{"Authorization", "Bearer sekret2"}, 401},
		{"wrong X-Api-Key", "GET", "/v1/models", [2]string{"X-Api-Key", "nope"}, 401},
		{"Bearer", "GET", "/v1/models", [2]string{"Authorization", "Bearer sekret"}, 200},
		{"bearer lower case", "GET", "/v1/models", [2]string{"Authorization", "bearer sekret"}, 200},
		{"BEARER upper case", "GET", "/v1/models", [2]string{"Authorization", "BEARER sekret"}, 200},
		{"X-Api-Key", "GET", "/v1/models", [2]string{"X-Api-Key", "sekret"}, 200},
		{"key, no route", "GET", "/v1/nothing", [2]string{"Authorization", "Bearer sekret"}, 404},
		{"key, wrong method", "DELETE", "/v1/completions", [2]string{"X-Api-Key", "sekret"}, 405},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, e.srv.URL+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.header[0] != "" {
				req.Header.Set(tt.header[0], tt.header[1])
			}
			resp, err := e.srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if tt.status == 401 {
				r := rawResponse{status: resp.StatusCode, header: resp.Header, body: readAll(t, resp)}
				if got := checkJSONError(t, r); got.Code != "invalid_api_key" {
					t.Errorf("error %+v", got)
				}
				if !strings.Contains(resp.Header.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("no WWW-Authenticate: Bearer on a 401")
				}
			}
		})
	}
}

// TestCORSPreflightEchoesHeaders checks that a preflight allows the
// headers the official SDKs send, and drops what is not a header name.
func TestCORSPreflightEchoesHeaders(t *testing.T) {
	e := newEnv(t, envOptions{cors: []string{"https://app.example"}, key: "k"})
	req, _ := http.NewRequest("OPTIONS", e.srv.URL+"/v1/chat/completions", nil)
	req.Header.Set("Origin", "https://app.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "content-type, X-Stainless-OS, x-stainless-retry-count,bad header, x-stainless-timeout")
	req.Header.Add("Access-Control-Request-Headers", "openai-organization")
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("preflight status %d, want 204 (no key needed)", resp.StatusCode)
	}
	allowed := map[string]bool{}
	for name := range strings.SplitSeq(resp.Header.Get("Access-Control-Allow-Headers"), ",") {
		allowed[strings.ToLower(strings.TrimSpace(name))] = true
	}
	for _, want := range []string{"authorization", "content-type", "x-api-key", "x-stainless-os", "x-stainless-retry-count", "x-stainless-timeout", "openai-organization"} {
		if !allowed[want] {
			t.Errorf("%q not allowed: %q", want, resp.Header.Get("Access-Control-Allow-Headers"))
		}
	}
	if allowed["bad header"] {
		t.Errorf("a malformed name was echoed: %q", resp.Header.Get("Access-Control-Allow-Headers"))
	}
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "https://app.example" {
		t.Errorf("Allow-Origin %q", got)
	}
}

func readAll(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
