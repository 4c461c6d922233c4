// Package badinput builds the llmserve binary, serves the shared
// stories260K model with it (once open, once with --api-key) and sends it
// hundreds of hostile requests in classes: wrong JSON types, absurd
// numbers, invalid UTF-8, deep nesting, huge bodies and headers, unknown
// roles, template-breaking text, token ids out of range, bad auth, slow
// and half-sent bodies, broken chunked encoding, bad methods and routes,
// prompts over the context, huge stop lists, logit_bias abuse and
// llama.cpp server fields with bad values. Every one must get a 4xx
// OpenAI-style JSON error (or, for the slow ones, a clean close); /health
// must stay 200 after each class; goroutines, open connections and busy
// slots must return to where they were. It skips when ../shared is absent
// and under -short.
package badinput

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"llmserve/internal/servertest"
	"llmserve/internal/shared"
)

const apiKey = "sekret"

// outcome is how one request ended.
type outcome struct {
	class, name string
	status      int
	closed      bool
	err         string // why it failed its want; "" when it passed
}

func TestBadInput(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary: skipped under -short")
	}
	model := shared.Path(t, "models/stories260K.gguf")
	bin := servertest.Build(t)
	open := startServer(t, bin, model, "")
	keyed := startServer(t, bin, model, apiKey)
	servers := []*servertest.Server{open, keyed}
	pick := func(k bool) *servertest.Server {
		if k {
			return keyed
		}
		return open
	}

	// A real generation first, so that lazily started workers count in
	// the baseline.
	for _, s := range servers {
		checkGenerates(t, s)
	}
	base := make([]map[string]float64, len(servers))
	for i, s := range servers {
		base[i] = gauges(t, s, gaugeNames...)
	}

	// The slow cases run beside the others: some wait out server timeouts.
	slowOut := make(chan outcome, 64)
	var slowWG sync.WaitGroup
	for _, sc := range slowCases() {
		slowWG.Go(func() {
			start := time.Now()
			r, err := sc.run(pick(sc.keyed).Addr)
			t.Logf("slow case %q: status %d, closed %v, after %v", sc.name, r.status, r.closed, time.Since(start).Round(time.Millisecond))
			slowOut <- judge("slow and half-sent bodies", sc.name, sc.want, r, err)
		})
	}

	var results []outcome
	for _, c := range classes() {
		results = append(results, runClass(c, pick)...)
		for _, s := range servers {
			if st, body, err := s.Get("/health"); err != nil || st != http.StatusOK {
				t.Errorf("after %q: /health on %s: %d %s %v", c.name, s.Addr, st, body, err)
			}
		}
	}
	slowWG.Wait()
	close(slowOut)
	for o := range slowOut {
		results = append(results, o)
	}
	for _, s := range servers {
		if st, body, err := s.Get("/health"); err != nil || st != http.StatusOK {
			t.Errorf("after the slow cases: /health on %s: %d %s %v", s.Addr, st, body, err)
		}
	}

	logTable(t, results)
	failed := 0
	for _, o := range results {
		if o.err != "" {
			failed++
			t.Errorf("%s / %s: %s", o.class, o.name, o.err)
		}
	}
	if len(results) < 250 {
		t.Errorf("only %d hostile requests, want at least 250", len(results))
	}
	t.Logf("%d hostile requests, %d failed", len(results), failed)

	for i, s := range servers {
		checkBaseline(t, s, base[i])
	}
}

// gaugeNames are the gauges that must return to their baseline.
var gaugeNames = []string{"go_goroutines", "llmserve_http_open_connections", "llmserve_slots_busy", "llmserve_queue_depth"}

// checkGenerates runs one small completion.
func checkGenerates(t *testing.T, s *servertest.Server) {
	t.Helper()
	var h []string
	if s.Key != "" {
		h = []string{"Authorization: Bearer " + s.Key}
	}
	r, err := exchange(s.Addr, request("POST", "/v1/completions", h, completion("")), 30*time.Second)
	if err != nil || r.status != http.StatusOK {
		t.Fatalf("a valid completion: %d %s %v", r.status, r.body, err)
	}
}

// checkBaseline waits for the gauges to come back to base.
func checkBaseline(t *testing.T, s *servertest.Server, base map[string]float64) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		now := gauges(t, s, gaugeNames...)
		var over []string
		for _, n := range gaugeNames {
			if now[n] > base[n] {
				over = append(over, fmt.Sprintf("%s %g (baseline %g)", n, now[n], base[n]))
			}
		}
		if len(over) == 0 {
			t.Logf("%s back to baseline: %v", s.Addr, now)
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s not back to baseline after 15s: %s", s.Addr, strings.Join(over, ", "))
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// runClass sends a class's requests, a few at a time.
func runClass(c class, pick func(bool) *servertest.Server) []outcome {
	out := make([]outcome, len(c.cases))
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i, h := range c.cases {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			r, err := exchange(pick(h.keyed).Addr, h.req, 20*time.Second)
			out[i] = judge(c.name, h.name, h.want, r, err)
		})
	}
	wg.Wait()
	return out
}

// judge checks a reply against what it had to be.
func judge(class, name string, w want, r reply, err error) outcome {
	o := outcome{class: class, name: name, status: r.status, closed: r.closed}
	fail := func(format string, args ...any) outcome {
		o.err = fmt.Sprintf("want %s: ", w) + fmt.Sprintf(format, args...)
		return o
	}
	switch {
	case err != nil:
		return fail("%v", err)
	case r.status == 0:
		if w == closed {
			return o
		}
		return fail("the connection closed without an answer")
	case r.status >= 500:
		return fail("status %d: %s", r.status, servertest.Tail(string(r.body), 300))
	case r.status >= 400:
		if msg := jsonError(r); msg != "" {
			return fail("status %d: %s: %q", r.status, msg, servertest.Tail(string(r.body), 300))
		}
		return o
	case w != handled:
		return fail("status %d: %s", r.status, servertest.Tail(string(r.body), 300))
	}
	return o
}

// jsonError says what is wrong with an error response, or "".
func jsonError(r reply) string {
	if !strings.HasPrefix(r.contentType, "application/json") {
		return "Content-Type " + r.contentType
	}
	var body struct {
		Error map[string]json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil || body.Error == nil {
		return "not an error object"
	}
	for _, k := range []string{"message", "type", "param", "code"} {
		if _, ok := body.Error[k]; !ok {
			return "no " + k
		}
	}
	var msg, typ string
	if json.Unmarshal(body.Error["message"], &msg) != nil || msg == "" || json.Unmarshal(body.Error["type"], &typ) != nil || typ == "" {
		return "message or type not a non-empty string"
	}
	return ""
}

// logTable logs requests and outcomes per class.
func logTable(t *testing.T, results []outcome) {
	type row struct {
		n, c4xx, c2xx, closed, failed int
		statuses                      map[int]int
	}
	rows := map[string]*row{}
	var order []string
	for _, o := range results {
		r := rows[o.class]
		if r == nil {
			r = &row{statuses: map[int]int{}}
			rows[o.class] = r
			order = append(order, o.class)
		}
		r.n++
		switch {
		case o.err != "":
			r.failed++
		case o.status >= 400:
			r.c4xx++
		case o.status == 0:
			r.closed++
		default:
			r.c2xx++
		}
		if o.status != 0 {
			r.statuses[o.status]++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-28s %5s %5s %5s %6s %6s  %s\n", "class", "sent", "4xx", "2xx", "closed", "FAILED", "statuses")
	total := row{}
	for _, name := range order {
		r := rows[name]
		codes := make([]int, 0, len(r.statuses))
		for c := range r.statuses {
			codes = append(codes, c)
		}
		sort.Ints(codes)
		var cs []string
		for _, c := range codes {
			cs = append(cs, fmt.Sprintf("%d×%d", c, r.statuses[c]))
		}
		fmt.Fprintf(&b, "%-28s %5d %5d %5d %6d %6d  %s\n", name, r.n, r.c4xx, r.c2xx, r.closed, r.failed, strings.Join(cs, " "))
		total.n += r.n
		total.c4xx += r.c4xx
		total.c2xx += r.c2xx
		total.closed += r.closed
		total.failed += r.failed
	}
	fmt.Fprintf(&b, "%-28s %5d %5d %5d %6d %6d\n", "total", total.n, total.c4xx, total.c2xx, total.closed, total.failed)
	t.Log(b.String())
}
