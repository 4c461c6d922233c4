package webui

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// tab is one browser tab and every console message it has shown.
type tab struct {
	t   *testing.T
	ctx context.Context

	mu      sync.Mutex                // guards console
	console []chromedp.ConsoleMessage // console calls, uncaught exceptions and browser log entries, in order
}

// newBrowser starts headless Chromium and returns its first tab.
func newBrowser(t *testing.T) *tab {
	t.Helper()
	exe := chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox, // root, as on CI, cannot run Chromium's sandbox
		chromedp.WindowSize(1100, 720),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	return watch(t, ctx)
}

// watch collects the console of the tab of ctx.
func watch(t *testing.T, ctx context.Context) *tab {
	tb := &tab{t: t, ctx: ctx}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			tb.mu.Lock()
			tb.console = append(tb.console, m)
			tb.mu.Unlock()
		}
	}()
	return tb
}

// do runs actions, failing the test on an error.
func (tb *tab) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		tb.t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](tb *tab, expr string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		tb.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// waitFor evaluates expr every few milliseconds until it is true. It does
// not use chromedp.Poll, which compiles its predicate with new Function in
// the page: the page's policy forbids that.
func (tb *tab) waitFor(what, expr string, timeout time.Duration) {
	tb.t.Helper()
	deadline := time.Now().Add(timeout)
	for !eval[bool](tb, "!!("+expr+")") {
		if time.Now().After(deadline) {
			tb.t.Fatalf("waited %v for %s (%s)", timeout, what, expr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkConsole writes a marker to the console and waits until the watcher
// has it, so that an empty list of errors means something.
func (tb *tab) checkConsole() {
	tb.t.Helper()
	eval[bool](tb, `console.info('llmserve-webui-test: console watched'), true`)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		tb.mu.Lock()
		for _, m := range tb.console {
			if m.Type == chromedp.ConsoleInfo && strings.Contains(m.Text, "llmserve-webui-test: console watched") {
				tb.mu.Unlock()
				return
			}
		}
		tb.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	tb.t.Fatal("the console watcher never saw the page's console.info")
}

// errors returns the console errors and exceptions, without those whose
// text holds one of expected.
func (tb *tab) errors(expected ...string) []string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	var out []string
next:
	for _, m := range tb.console {
		if m.Type != chromedp.ConsoleError && m.Type != chromedp.ConsoleException {
			continue
		}
		for _, e := range expected {
			if strings.Contains(m.Text, e) {
				continue next
			}
		}
		out = append(out, fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line+1))
	}
	return out
}

// screenshot saves the viewport as a PNG file in dir and returns its path;
// LLMSERVE_WEBUI_SCREENSHOTS=DIR keeps a copy there too.
func (tb *tab) screenshot(dir, name string) string {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		tb.t.Fatalf("screenshot: %v", err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		tb.t.Fatal(err)
	}
	if keep := os.Getenv("LLMSERVE_WEBUI_SCREENSHOTS"); keep != "" {
		if err := os.WriteFile(filepath.Join(keep, name), png, 0o644); err != nil {
			tb.t.Errorf("keeping the screenshot: %v", err)
		}
	}
	return path
}

// settings opens the settings, sets the fields (by element id) and closes them.
func (tb *tab) settings(fields map[string]string) {
	tb.t.Helper()
	tb.do("opening the settings", chromedp.Click(chromedp.ID("open-settings")), chromedp.WaitVisible(chromedp.ID("settings")))
	for id, v := range fields {
		// As typing would: the value, then the change event.
		js := fmt.Sprintf(`(() => { const e = document.getElementById(%s); e.value = %s; e.dispatchEvent(new Event('change')); return e.value; })()`, toJSON(id), toJSON(v))
		if got := eval[string](tb, js); got != v {
			tb.t.Fatalf("setting #%s to %q left %q", id, v, got)
		}
	}
	tb.do("closing the settings", chromedp.Click(chromedp.ID("close-settings")), chromedp.WaitNotVisible(chromedp.ID("settings")))
}

// send types a message and sends it with the Send button.
func (tb *tab) send(text string) {
	tb.t.Helper()
	tb.do("sending "+text, chromedp.SetValue(chromedp.ID("input"), text), chromedp.Click(chromedp.ID("send")))
}

// waitReply waits until no reply is streaming.
func (tb *tab) waitReply(timeout time.Duration) {
	tb.t.Helper()
	tb.waitFor("the reply to end", `document.querySelector('#messages .msg.assistant') && !document.querySelector('#messages .msg.streaming') && !document.getElementById('send').hidden`, timeout)
}

// shownMessage is a message as the view shows it.
type shownMessage struct {
	Class string `json:"class"`
	Text  string `json:"text"`
	Stats string `json:"stats"`
}

func (tb *tab) shown() []shownMessage {
	tb.t.Helper()
	return eval[[]shownMessage](tb, `[...document.querySelectorAll('#messages .msg')].map(m => ({
		class: m.className, text: m.querySelector('.body').textContent, stats: m.querySelector('.stats').textContent}))`)
}

// storedConv is a conversation as the page keeps it in localStorage.
type storedConv struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
		Error   bool   `json:"error"`
		Stats   *struct {
			Tokens int     `json:"tokens"`
			TTFT   float64 `json:"ttft"`
			TPS    float64 `json:"tps"`
			Finish string  `json:"finish"`
		} `json:"stats"`
	} `json:"messages"`
}

func (tb *tab) stored() []storedConv {
	tb.t.Helper()
	return eval[[]storedConv](tb, `JSON.parse(localStorage.getItem('llmserve.conversations') || '[]')`)
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
