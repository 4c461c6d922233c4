package httpapi

import (
	"os"
	"testing"

	"llmserve/model/chat"
)

// TestMain lets the test binary serve as a chat-template worker, as the
// llmserve binary does, so that tests render Jinja templates the way the
// server does: in bounded worker processes.
func TestMain(m *testing.M) {
	if code, ok := chat.RunWorker(); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// renderer wraps a template for a Model, closed with the test.
func renderer(t testing.TB, tmpl *chat.Template) *chat.Renderer {
	t.Helper()
	r, err := chat.NewRenderer(tmpl, chat.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}
