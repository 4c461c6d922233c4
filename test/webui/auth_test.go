package webui

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestAPIKeyPrompt serves with --api-key: the page loads without the key,
// asks for it when /props answers 401, asks again when the key is wrong,
// then keeps the right one and chats with it; after the key is forgotten,
// sending asks for it again and the message goes through.
func TestAPIKeyPrompt(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium and the llmserve binary: skipped under -short")
	}
	const key = "webui-secret"
	srv := startServer(t, key, "-c", "512", "-np", "1")
	tb := newBrowser(t)
	tb.do("opening the page", chromedp.Navigate(srv.url+"/"))
	tb.checkConsole()
	dialogOpen := `document.getElementById('key-dialog').open`
	tb.waitFor("the key dialog", dialogOpen, 10*time.Second)
	if !eval[bool](tb, `document.getElementById('key-error').hidden`) {
		t.Error("the first prompt says a key was refused")
	}
	tb.do("a wrong key", chromedp.SetValue(chromedp.ID("key-input"), "wrong"), chromedp.Click(chromedp.ID("key-save")))
	tb.waitFor("the dialog again, saying the key was refused", dialogOpen+` && !document.getElementById('key-error').hidden`, 10*time.Second)
	tb.do("the right key", chromedp.SetValue(chromedp.ID("key-input"), key), chromedp.Click(chromedp.ID("key-save")))
	tb.waitFor("the model's name", `document.getElementById('model-name').textContent === 'stories260K'`, 10*time.Second)
	if eval[bool](tb, dialogOpen) {
		t.Error("the dialog is still open with the right key")
	}
	if got := eval[string](tb, `JSON.parse(localStorage.getItem('llmserve.apiKey'))`); got != key {
		t.Errorf("localStorage keeps the key %q, want %q", got, key)
	}

	tb.settings(map[string]string{"set-max-tokens": "20"})
	tb.send("Once upon a time")
	tb.waitReply(20 * time.Second)
	if shown := tb.shown(); len(shown) != 2 || strings.Contains(shown[1].Class, "error") || shown[1].Text == "" {
		t.Fatalf("with the key: %s", toJSON(shown))
	}

	// A 401 on the chat request itself: forget the key, send, answer the
	// prompt, and the same message goes through.
	tb.do("forget the key", chromedp.Click(chromedp.ID("open-settings")), chromedp.Click(chromedp.ID("forget-key")), chromedp.Click(chromedp.ID("close-settings")))
	tb.send("The little dog")
	tb.waitFor("the key dialog on sending", dialogOpen, 10*time.Second)
	tb.do("the key again", chromedp.SetValue(chromedp.ID("key-input"), key), chromedp.Click(chromedp.ID("key-save")))
	tb.waitReply(20 * time.Second)
	shown := tb.shown()
	if len(shown) != 4 || shown[2].Text != "The little dog" || strings.Contains(shown[3].Class, "error") || shown[3].Text == "" {
		t.Fatalf("after the second prompt: %s", toJSON(shown))
	}
	// The 401 answers show as failed loads in the console; nothing else may.
	if errs := tb.errors("status of 401"); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}
