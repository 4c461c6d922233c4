package webui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"
)

// TestChatPage drives the page against the real binary, one step after
// another in one tab: each step leaves the conversations the next one
// uses.
func TestChatPage(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium and the llmserve binary: skipped under -short")
	}
	srv := startServer(t, "", "-c", "4096", "-np", "2")
	tb := newBrowser(t)
	shots := t.TempDir()
	tb.do("opening the page", chromedp.Navigate(srv.url+"/"))
	tb.checkConsole()
	tb.waitFor("the model's name from /props", `document.getElementById('model-name').textContent === 'stories260K'`, 10*time.Second)
	if info := eval[string](tb, `document.getElementById('model-info').textContent`); !strings.Contains(info, "context 4096 tokens") || !strings.Contains(info, "2 slots") {
		t.Errorf("model info %q, want the context size and slots", info)
	}

	steps := []struct {
		name string
		run  func(t *testing.T, tb *tab, srv *server, shots string)
	}{
		{"a reply streams in", streamsAReply},
		{"Stop ends a reply and frees the slot", stopsAReply},
		{"HTML in a reply stays text", htmlStaysText},
		{"Markdown renders safely", markdownRenders},
		{"a reload keeps the conversations", reloadKeeps},
		{"a conversation is deleted", deletesAConversation},
		{"a phone's width", phoneWidth},
		{"a short reply for the README", shortReply},
	}
	for _, st := range steps {
		tb.t = t
		ok := t.Run(st.name, func(t *testing.T) {
			tb.t = t
			st.run(t, tb, srv, shots)
		})
		tb.t = t
		if !ok {
			break
		}
	}
	if errs := tb.errors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// streamsAReply sends a message at temperature 0 and checks that the reply
// grew over several animation frames, that the page kept the same text the
// server gives for the same request, and the reply's figures.
func streamsAReply(t *testing.T, tb *tab, srv *server, shots string) {
	const maxTokens = 1000
	tb.settings(map[string]string{"set-temperature": "0", "set-max-tokens": fmt.Sprint(maxTokens), "set-extra": `{"ignore_eos": true}`})
	// Record the streaming reply's length at every animation frame.
	eval[bool](tb, `(() => { window.__lens = []; const tick = () => {
		const b = document.querySelector('#messages .msg.streaming .body');
		if (b) window.__lens.push(b.textContent.length);
		if (window.__lens.length < 20000) requestAnimationFrame(tick);
	}; requestAnimationFrame(tick); return true; })()`)
	start := time.Now()
	tb.send("Once upon a time")
	tb.waitReply(30 * time.Second)
	took := time.Since(start)
	lens := eval[[]int](tb, `window.__lens`)
	distinct := map[int]bool{}
	for i, n := range lens {
		if i > 0 && n < lens[i-1] {
			t.Fatalf("the reply shrank from %d to %d characters at frame %d", lens[i-1], n, i)
		}
		if n > 0 {
			distinct[n] = true
		}
	}
	t.Logf("%d tokens in %v; the streaming reply was seen in %d frames at %d different lengths", maxTokens, took.Round(time.Millisecond), len(lens), len(distinct))
	if len(distinct) < 3 {
		t.Errorf("the reply took %d different lengths over %d frames, want it to grow over at least 3: %v", len(distinct), len(lens), lens)
	}

	convs := tb.stored()
	if len(convs) != 1 || len(convs[0].Messages) != 2 {
		t.Fatalf("stored conversations: %s", toJSON(convs))
	}
	reply := convs[0].Messages[1]
	if reply.Role != "assistant" || reply.Error || reply.Stats == nil || reply.Stats.Tokens != maxTokens || reply.Stats.Finish != "length" {
		t.Fatalf("stored reply: %s", toJSON(reply))
	}
	// The same request, not streamed, gives the same text at temperature 0.
	want := chatContent(t, srv, map[string]any{
		"model": "stories260K", "messages": []map[string]string{{"role": "user", "content": "Once upon a time"}},
		"temperature": 0, "max_tokens": maxTokens, "ignore_eos": true,
	})
	if reply.Content != want {
		t.Errorf("the page kept\n%q\nthe server answers\n%q", reply.Content, want)
	}
	shown := tb.shown()
	if len(shown) != 2 || shown[0].Text != "Once upon a time" || !strings.Contains(shown[1].Class, "assistant") {
		t.Fatalf("shown: %s", toJSON(shown))
	}
	stats := regexp.MustCompile(`^1000 tokens · ([0-9.]+) tokens/s · first token (\d+) ms · finish: length$`).FindStringSubmatch(shown[1].Stats)
	if stats == nil {
		t.Errorf("reply figures %q, want tokens, tokens/s, time to first token and the finish", shown[1].Stats)
	} else {
		t.Logf("the page showed %s tokens/s, first token after %s ms", stats[1], stats[2])
	}
	t.Logf("screenshot: %s", tb.screenshot(shots, "chat.png"))
}

// stopsAReply starts a reply that would run to the end of the context,
// stops it, and checks that it stopped growing and its slot went idle.
func stopsAReply(t *testing.T, tb *tab, srv *server, _ string) {
	const text = `<script>window.__pwned = "user"</script> Tell me a long story`
	tb.do("new chat", chromedp.Click(chromedp.ID("new-chat")))
	tb.settings(map[string]string{"set-max-tokens": ""})
	tb.send(text)
	tb.waitFor("the reply to be 200 characters long", `(document.querySelector('#messages .msg.streaming .body') || {textContent: ''}).textContent.length > 200`, 20*time.Second)
	busy := 0
	for _, s := range slots(t, srv) {
		if s.IsProcessing {
			busy++
		}
	}
	if busy != 1 {
		t.Errorf("%d slots processing while the reply streams, want 1", busy)
	}
	tb.do("Stop", chromedp.Click(chromedp.ID("stop")))
	stopped := time.Now()
	tb.waitReply(5 * time.Second)
	idle := waitIdle(t, srv, 5*time.Second)
	t.Logf("every slot idle %v after Stop", idle.Sub(stopped).Round(time.Millisecond))
	length := func() int {
		return eval[int](tb, `[...document.querySelectorAll('#messages .msg.assistant .body')].pop().textContent.length`)
	}
	before := length()
	time.Sleep(300 * time.Millisecond)
	if after := length(); after != before {
		t.Errorf("the reply grew from %d to %d characters after Stop", before, after)
	}
	shown := tb.shown()
	last := shown[len(shown)-1]
	if !strings.HasSuffix(last.Stats, "stopped") {
		t.Errorf("figures of the stopped reply %q, want them to say stopped", last.Stats)
	}
	convs := tb.stored()
	reply := convs[0].Messages[len(convs[0].Messages)-1]
	if reply.Stats == nil || reply.Stats.Finish != "stopped" || reply.Stats.Tokens < 1 || reply.Stats.Tokens > 3500 {
		t.Errorf("stored stopped reply: %s", toJSON(reply.Stats))
	}
	// The user's message went through the real server and is shown as text.
	if shown[0].Text != text {
		t.Errorf("the user's message shows as %q, want %q", shown[0].Text, text)
	}
	if n := eval[int](tb, `document.querySelectorAll('#messages script').length`); n != 0 || eval[bool](tb, `'__pwned' in window`) {
		t.Errorf("the user's <script> became an element (%d) or ran", n)
	}
}

// htmlStaysText answers the page's next chat request from the test itself,
// through the DevTools Fetch domain: a stream whose text holds a script,
// an image with an onerror handler, a javascript: link and HTML in code.
// The real model cannot be made to write these, so this one reply is the
// test's; everything else on the page is as served.
func htmlStaysText(t *testing.T, tb *tab, _ *server, _ string) {
	pieces := []string{
		"Here is <script>window.__pwned = 1</script>",
		` and <img src=x onerror="window.__pwned = 2">`,
		"\n\n```html\n<script>window.__pwned = 3</script>\n```\n\n",
		"[bad](javascript:window.__pwned=4) [good](https://example.org/a?b=1&c=\"x\") **bold** `<b>code</b>`",
	}
	var sse bytes.Buffer
	for _, p := range pieces {
		ev, _ := json.Marshal(map[string]any{"object": "chat.completion.chunk", "choices": []any{map[string]any{"index": 0, "delta": map[string]string{"content": p}, "finish_reason": nil}}})
		fmt.Fprintf(&sse, "data: %s\n\n", ev)
	}
	fmt.Fprint(&sse, `data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")

	paused := chromedp.Events(tb.ctx, fetch.RequestPaused)
	if _, err := chromedp.Call(tb.ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*/v1/chat/completions"}}}); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	var sent map[string]any // the request body the page sent
	go func() {
		for ev, err := range paused {
			if err != nil {
				served <- err
				return
			}
			var body []byte
			for _, e := range ev.Request.PostDataEntries {
				body = append(body, e.Bytes...)
			}
			if err := json.Unmarshal(body, &sent); err != nil {
				served <- fmt.Errorf("the page's request body %q: %w", body, err)
				return
			}
			_, err := chromedp.Call(tb.ctx, fetch.FulfillRequest, fetch.FulfillRequestParams{
				RequestID: ev.RequestID, ResponseCode: 200,
				ResponseHeaders: []*fetch.HeaderEntry{{Name: "Content-Type", Value: "text/event-stream"}},
				Body:            sse.Bytes(),
			})
			served <- err
			return
		}
	}()
	defer chromedp.Call(tb.ctx, fetch.Disable, struct{}{})
	tb.do("new chat", chromedp.Click(chromedp.ID("new-chat")))
	tb.settings(map[string]string{"set-system": "You are a careful assistant.", "set-top-p": "0.9", "set-seed": "42", "set-max-tokens": "64"})
	defer tb.settings(map[string]string{"set-system": "", "set-top-p": "", "set-seed": "", "set-max-tokens": ""})
	tb.send("show me some HTML")
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("answering the request: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the page sent no chat request")
	}
	tb.waitReply(10 * time.Second)
	// The settings went into the request.
	wantSent := map[string]any{
		"model": "stories260K", "stream": true, "temperature": 0.0, "top_p": 0.9, "seed": 42.0, "max_tokens": 64.0, "ignore_eos": true,
		"messages": []any{
			map[string]any{"role": "system", "content": "You are a careful assistant."},
			map[string]any{"role": "user", "content": "show me some HTML"},
		},
		"stream_options": map[string]any{"include_usage": true},
	}
	if toJSON(sent) != toJSON(wantSent) {
		t.Errorf("the page sent\n%s\nwant\n%s", toJSON(sent), toJSON(wantSent))
	}
	body := `[...document.querySelectorAll('#messages .msg.assistant .body')].pop()`
	if eval[bool](tb, `'__pwned' in window`) {
		t.Errorf("the reply's code ran: window.__pwned = %v", eval[any](tb, `window.__pwned`))
	}
	if n := eval[int](tb, `document.querySelectorAll('#messages script, #messages img, #messages iframe').length`); n != 0 {
		t.Errorf("%d script, img or iframe elements in the conversation", n)
	}
	if attrs := eval[[]string](tb, `[...document.querySelectorAll('#messages *')].flatMap(e => [...e.attributes].map(a => a.name)).filter(n => n.startsWith('on'))`); len(attrs) > 0 {
		t.Errorf("event handler attributes in the conversation: %v", attrs)
	}
	text := eval[string](tb, body+`.textContent`)
	for _, want := range []string{`<script>window.__pwned = 1</script>`, `<img src=x onerror="window.__pwned = 2">`, "bold", "[bad](javascript:window.__pwned=4)"} {
		if !strings.Contains(text, want) {
			t.Errorf("the reply lacks the text %q: %q", want, text)
		}
	}
	if code := eval[string](tb, body+`.querySelector('pre code').textContent`); code != `<script>window.__pwned = 3</script>` {
		t.Errorf("code block %q", code)
	}
	links := eval[[]string](tb, `[...`+body+`.querySelectorAll('a')].map(a => a.getAttribute('href'))`)
	if len(links) != 1 || links[0] != `https://example.org/a?b=1&c="x"` {
		t.Errorf("links %q, want only the https one", links)
	}
	if got := eval[string](tb, body+`.querySelector('strong').textContent + '|' + `+body+`.querySelector(':not(pre) > code').textContent`); got != "bold|<b>code</b>" {
		t.Errorf("bold and inline code %q", got)
	}
}

// markdownRenders checks the page's renderer on a table of inputs, in the
// page, where it runs.
func markdownRenders(t *testing.T, tb *tab, _ *server, _ string) {
	tests := []struct{ in, want string }{
		{"plain", "<p>plain</p>"},
		{"a < b && c > d", "<p>a &lt; b &amp;&amp; c &gt; d</p>"},
		{"<b>bold?</b>", "<p>&lt;b&gt;bold?&lt;/b&gt;</p>"},
		{"**bold** and *it* and __b2__ and _i2_ and ~~gone~~", "<p><strong>bold</strong> and <em>it</em> and <strong>b2</strong> and <em>i2</em> and <del>gone</del></p>"},
		{"snake_case_name stays", "<p>snake_case_name stays</p>"},
		{"`a <b> **c**`", "<p><code>a &lt;b&gt; **c**</code></p>"},
		{"```js\nif (a < b) { x = \"**\" }\n```", `<pre><code class="language-js">if (a &lt; b) { x = &quot;**&quot; }</code></pre>`},
		{"```\nstill streaming <i>", "<pre><code>still streaming &lt;i&gt;</code></pre>"},
		{"```\" onmouseover=\"x\nc\n```", "<pre><code>c</code></pre>"},
		{"- one\n- **two**\n\n1. first\n2. second", "<ul><li>one</li><li><strong>two</strong></li></ul><ol><li>first</li><li>second</li></ol>"},
		{"3. three\n4. four", `<ol start="3"><li>three</li><li>four</li></ol>`},
		{"# Title\n## Sub *x*", "<h1>Title</h1><h2>Sub <em>x</em></h2>"},
		{"> quoted <x>", "<blockquote><p>quoted &lt;x&gt;</p></blockquote>"},
		{"line one\nline two\n\nnext", "<p>line one<br>line two</p><p>next</p>"},
		{"[ok](https://a.example/x?y=1&z=2)", `<p><a href="https://a.example/x?y=1&amp;z=2" target="_blank" rel="noopener noreferrer nofollow">ok</a></p>`},
		{"[js](javascript:alert(1))", "<p>[js](javascript:alert(1))</p>"},
		{"[data](data:text/html,<script>x</script>)", "<p>[data](data:text/html,&lt;script&gt;x&lt;/script&gt;)</p>"},
		{`[q](https://a.example/"onmouseover="x)`, `<p><a href="https://a.example/&quot;onmouseover=&quot;x" target="_blank" rel="noopener noreferrer nofollow">q</a></p>`},
		{"[**b**](http://a.example)", `<p><a href="http://a.example" target="_blank" rel="noopener noreferrer nofollow"><strong>b</strong></a></p>`},
		{"\x00" + "0\x00 placeholder", "<p>0 placeholder</p>"},
		{"---", "<hr>"},
	}
	for _, tt := range tests {
		in, _ := json.Marshal(tt.in)
		if got := eval[string](tb, "LLMMarkdown.render("+string(in)+")"); got != tt.want {
			t.Errorf("render(%q)\n got %s\nwant %s", tt.in, got, tt.want)
		}
	}
}

// reloadKeeps reloads the page and checks that the view and the list of
// conversations come back as they were.
func reloadKeeps(t *testing.T, tb *tab, _ *server, _ string) {
	before, convs := tb.shown(), tb.stored()
	tb.do("reload", chromedp.Reload())
	tb.waitFor("the page after the reload", `document.getElementById('model-name').textContent === 'stories260K' && document.querySelectorAll('#messages .msg').length > 0`, 10*time.Second)
	if after := tb.shown(); toJSON(after) != toJSON(before) {
		t.Errorf("after the reload the view shows\n%s\nbefore it showed\n%s", toJSON(after), toJSON(before))
	}
	if n := eval[int](tb, `document.querySelectorAll('#conversations li').length`); n != len(convs) || n != 3 {
		t.Errorf("%d conversations listed after the reload, %d stored, want 3", n, len(convs))
	}
}

// deletesAConversation deletes the current conversation from the list.
func deletesAConversation(t *testing.T, tb *tab, _ *server, _ string) {
	before := tb.stored()
	tb.do("delete", chromedp.Click(chromedp.CSS("#conversations li.current .delete")))
	after := tb.stored()
	if len(after) != len(before)-1 || after[0].ID != before[1].ID {
		t.Fatalf("after deleting %s: %s", before[0].ID, toJSON(after))
	}
	if n := eval[int](tb, `document.querySelectorAll('#conversations li').length`); n != len(after) {
		t.Errorf("%d conversations listed, %d stored", n, len(after))
	}
	if shown := tb.shown(); len(shown) == 0 || !strings.Contains(shown[0].Text, "Tell me a long story") {
		t.Errorf("after the delete the view shows %s, want the next conversation", toJSON(shown))
	}
}

// phoneWidth narrows the viewport to a phone's and checks that nothing
// overflows sideways and that the list of conversations is a drawer.
func phoneWidth(t *testing.T, tb *tab, _ *server, shots string) {
	tb.do("phone viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
	defer tb.do("desktop viewport", chromedp.EmulateViewport(1100, 720))
	tb.waitFor("the narrow layout", `window.innerWidth === 390 && getComputedStyle(document.getElementById('open-sidebar')).display !== 'none'`, 5*time.Second)
	if w := eval[int](tb, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("the page is %d px wide in a 390 px viewport", w)
	}
	// The list slides out of view (a 0.15 s transition) until it is opened.
	tb.waitFor("the conversation list out of view", `document.getElementById('sidebar').getBoundingClientRect().right <= 0`, 2*time.Second)
	for _, id := range []string{"input", "send", "open-settings"} {
		if r := eval[float64](tb, `document.getElementById('`+id+`').getBoundingClientRect().right`); r > 390 {
			t.Errorf("#%s ends at %v px, past the viewport", id, r)
		}
	}
	t.Logf("phone screenshot: %s", tb.screenshot(shots, "phone.png"))
	tb.do("open the list", chromedp.Click(chromedp.ID("open-sidebar")))
	tb.waitFor("the drawer to open", `document.getElementById('sidebar').getBoundingClientRect().left >= 0`, 5*time.Second)
	t.Logf("phone screenshot with the list open: %s", tb.screenshot(shots, "phone-list.png"))
	tb.do("close the list", chromedp.Click(chromedp.ID("close-sidebar")))
}

// slotJSON is the part of GET /slots the tests read.
type slotJSON struct {
	ID           int    `json:"id"`
	IsProcessing bool   `json:"is_processing"`
	State        string `json:"state"`
}

func slots(t *testing.T, srv *server) []slotJSON {
	t.Helper()
	req, _ := http.NewRequest("GET", srv.url+"/slots", nil)
	if srv.key != "" {
		req.Header.Set("Authorization", "Bearer "+srv.key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s []slotJSON
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil || len(s) == 0 {
		t.Fatalf("/slots: %v (%d slots)", err, len(s))
	}
	return s
}

// waitIdle polls /slots until every slot is idle and returns when.
func waitIdle(t *testing.T, srv *server, timeout time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		idle := true
		s := slots(t, srv)
		for _, sl := range s {
			idle = idle && !sl.IsProcessing && sl.State == "idle"
		}
		if idle {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("slots still busy %v after Stop: %+v", timeout, s)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// chatContent posts a chat request (not streamed) and returns the reply.
func chatContent(t *testing.T, srv *server, body map[string]any) string {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", srv.url+"/v1/chat/completions", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if srv.key != "" {
		req.Header.Set("Authorization", "Bearer "+srv.key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || resp.StatusCode != 200 || len(out.Choices) != 1 {
		t.Fatalf("chat request: status %d, %v: %s", resp.StatusCode, err, raw)
	}
	return out.Choices[0].Message.Content
}

// shortReply has the model tell a short story at temperature 0 and saves
// the screenshot the README shows.
func shortReply(t *testing.T, tb *tab, _ *server, shots string) {
	tb.do("new chat", chromedp.Click(chromedp.ID("new-chat")))
	tb.settings(map[string]string{"set-temperature": "0", "set-max-tokens": "90", "set-extra": ""})
	tb.send("Tell me a story about a little dog.")
	tb.waitReply(20 * time.Second)
	shown := tb.shown()
	if len(shown) != 2 || strings.Contains(shown[1].Class, "error") || shown[1].Text == "" {
		t.Fatalf("shown: %s", toJSON(shown))
	}
	t.Logf("screenshot: %s", tb.screenshot(shots, "readme.png"))
}
