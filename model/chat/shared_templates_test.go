package chat

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"llmserve/internal/shared"
)

// sharedTemplates reads the model authors' templates of ../shared/templates.
func sharedTemplates(t testing.TB) map[string]string {
	t.Helper()
	dir := shared.Path(t, "templates")
	paths, err := filepath.Glob(filepath.Join(dir, "*.jinja"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no templates in %s (%v)", dir, err)
	}
	srcs := map[string]string{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		srcs[filepath.Base(p)] = string(b)
	}
	return srcs
}

// toolConversation exercises tools, tool calls, tool results and
// variables of every kind Options.Vars takes.
var toolConversation = struct {
	msgs []Message
	opts Options
}{
	msgs: []Message{
		{Role: "system", Content: "You are terse."},
		{Role: "user", Content: "Weather in Paris? {{ not a tag }}"},
		{Role: "assistant", ToolCalls: []ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris","days":3,"deep":{"z":1.5,"a":[true,null]}}`}}},
		{Role: "tool", Content: `{"temp": 21}`, ToolCallID: "call_1", Name: "get_weather"},
		{Role: "assistant", Content: "21 °C."},
		{Role: "user", Content: "Thanks"},
	},
	opts: Options{
		AddGenerationPrompt: true, BOSToken: "<s>", EOSToken: "</s>",
		Tools: json.RawMessage(`[{"type":"function","function":{"name":"get_weather","description":"Weather <now>",` +
			`"parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]}}}]`),
		Vars: map[string]any{"enable_thinking": false, "n": 2, "f": 1.0, "list": []any{1, "a", nil}, "m": map[string]any{"b": 1, "a": 2.5}},
		Now:  func() time.Time { return time.Date(2025, 7, 26, 12, 0, 0, 0, time.UTC) },
	},
}

// A render through a worker gives what the same render in process gives.
func TestRendererMatchesInProcess(t *testing.T) {
	srcs := sharedTemplates(t)
	names := make([]string, 0, len(srcs))
	for n := range srcs {
		names = append(names, n)
	}
	sort.Strings(names)
	c := toolConversation
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			r := newTestRenderer(t, srcs[name], Limits{Workers: 1})
			for _, msgs := range [][]Message{c.msgs, c.msgs[:2], slices.Concat(c.msgs[:2], c.msgs[4:5])} {
				want, wantErr := r.Template().Render(msgs, c.opts)
				got, err := r.Render(context.Background(), msgs, c.opts)
				var re, wantRe *RenderError
				errors.As(err, &re)
				errors.As(wantErr, &wantRe)
				switch {
				case (err == nil) != (wantErr == nil):
					t.Errorf("worker error %v, in process %v", err, wantErr)
				case err != nil && (re == nil || wantRe == nil || re.Kind != wantRe.Kind || re.Msg != wantRe.Msg):
					t.Errorf("worker error %v, in process %v", err, wantErr)
				case got != want:
					t.Errorf("worker:\n%q\nin process:\n%q", got, want)
				}
			}
		})
	}
}

// renderLatency renders n times and returns the latencies.
func renderLatency(n int, render func() error) ([]time.Duration, error) {
	lat := make([]time.Duration, n)
	for i := range lat {
		start := time.Now()
		if err := render(); err != nil {
			return nil, err
		}
		lat[i] = time.Since(start)
	}
	return lat, nil
}

// concurrentLatency renders n times from each of clients goroutines at once.
func concurrentLatency(clients, n int, render func() error) ([]time.Duration, error) {
	var mu sync.Mutex // guards all and firstErr
	var all []time.Duration
	var firstErr error
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat, err := renderLatency(n, render)
			mu.Lock()
			defer mu.Unlock()
			all = append(all, lat...)
			if err != nil && firstErr == nil {
				firstErr = err
			}
		}()
	}
	wg.Wait()
	return all, firstErr
}

// BenchmarkRenderLatency reports p50 and p99 of 2048 renders of the Llama
// 3.1 template with tools, in process and through workers, from one
// client and from 64 at once (whose latency includes the wait for a CPU
// or one of the Limits.Workers workers).
func BenchmarkRenderLatency(b *testing.B) {
	src := sharedTemplates(b)["meta-llama-Llama-3.1-8B-Instruct.jinja"]
	tmpl, err := New(src)
	if err != nil {
		b.Fatal(err)
	}
	r, err := NewRenderer(tmpl, Limits{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	c := toolConversation
	inProcess := func() error { _, err := tmpl.Render(c.msgs, c.opts); return err }
	worker := func() error { _, err := r.Render(context.Background(), c.msgs, c.opts); return err }
	for _, bc := range []struct {
		name    string
		clients int
		render  func() error
	}{
		{"in-process", 1, inProcess}, {"worker", 1, worker},
		{"in-process-64-clients", 64, inProcess}, {"worker-64-clients", 64, worker},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				lat, err := concurrentLatency(bc.clients, 2048/bc.clients, bc.render)
				if err != nil {
					b.Fatal(err)
				}
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			}
		})
	}
}
