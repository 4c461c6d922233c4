package chat

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// testLimits keep the bound tests short.
var testLimits = Limits{Timeout: 1500 * time.Millisecond, MaxOutput: 1 << 20, Workers: 2}

func newTestRenderer(t *testing.T, src string, lim Limits) *Renderer {
	t.Helper()
	tmpl, err := New(src)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRenderer(tmpl, lim)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// renderKind renders and returns the kind and bound of the failure.
func renderKind(r *Renderer, ctx context.Context, content string) (string, ErrorKind, string, error) {
	out, err := r.Render(ctx, []Message{{Role: "user", Content: content}}, Options{})
	var re *RenderError
	if errors.As(err, &re) {
		return out, re.Kind, re.Bound, err
	}
	return out, 0, "", err
}

// A template that passes a bound fails its request with that bound, and
// the next request on the same Renderer succeeds.
func TestRendererBounds(t *testing.T) {
	const ok = "{% if messages[0].content == 'go' %}"
	tests := []struct {
		name, body string
		kind       ErrorKind
		bound      string
		orBound    string // a bound that may come first on a slow machine
	}{
		{"recursion", "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", ErrLimit, BoundRecursion, ""},
		{"mutual recursion", "{% macro a() %}{{ b() }}{% endmacro %}{% macro b() %}{{ a() }}{% endmacro %}{{ a() }}", ErrLimit, BoundRecursion, ""},
		{"huge range", "{% for i in range(100000000) %}{% endfor %}", ErrLimit, BoundRange, ""},
		{"range past int64", "{% for i in range(-9223372036854775807, 9223372036854775807) %}{% endfor %}", ErrLimit, BoundRange, ""},
		{"nested ranges", "{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}", ErrLimit, BoundRange, ""},
		{"nested loops over a string", "{% set s = 'ab' * 20000 %}{% for a in s %}{% for b in s %}{% endfor %}{% endfor %}", ErrLimit, BoundTime, ""},
		{"huge string multiplication", "{{ 'abc' * 10000000000 }}", ErrLimit, BoundMemory, ""},
		{"doubling string", "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s | length }}", ErrLimit, BoundMemory, BoundTime},
		{"growing list", "{% set ns = namespace(l=[1]) %}{% for i in range(40) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l | length }}", ErrLimit, BoundMemory, BoundTime},
		{"huge output", "{% for i in range(30000) %}{{ 'x' * 100 }}{% endfor %}", ErrLimit, BoundOutput, ""},
		{"raise_exception", "{{ raise_exception('roles must alternate') }}", ErrRejected, "", ""},
		{"type error", "{{ messages.nosuchmethod() }}", ErrTemplate, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.bound == BoundMemory && runtime.GOOS != "linux" {
				t.Skip("the address space is capped on Linux only")
			}
			if tc.bound == BoundMemory && raceBuild {
				t.Skip("the race detector's shadow memory does not fit under the address-space cap")
			}
			r := newTestRenderer(t, ok+"ok{% else %}"+tc.body+"{% endif %}", testLimits)
			start := time.Now()
			_, kind, bound, err := renderKind(r, context.Background(), "bad")
			if kind != tc.kind || bound != tc.bound && (tc.orBound == "" || bound != tc.orBound) {
				t.Fatalf("error = %v (kind %v, bound %q), want kind %v, bound %q", err, kind, bound, tc.kind, tc.bound)
			}
			var re *RenderError
			if errors.As(err, &re) && re.ClientFault() != (tc.kind == ErrRejected) {
				t.Errorf("ClientFault() = %v for kind %v", re.ClientFault(), tc.kind)
			}
			if tc.kind == ErrLimit && !strings.Contains(err.Error(), bound+" limit") {
				t.Errorf("error %q does not name the %s bound", err, bound)
			}
			t.Logf("%s after %v: %v", tc.name, time.Since(start).Round(time.Millisecond), err)
			if out, err := r.Render(context.Background(), []Message{{Role: "user", Content: "go"}}, Options{}); err != nil || out != "ok" {
				t.Errorf("next render = %q, %v; want ok", out, err)
			}
		})
	}
}

// Canceling the request's context ends a slow render at once, well
// before the time bound, and the Renderer recovers.
func TestRendererCancel(t *testing.T) {
	lim := testLimits
	lim.Timeout = time.Minute
	r := newTestRenderer(t, "{% if messages[0].content == 'go' %}ok{% else %}{% set s = 'ab' * 50000 %}{% for a in s %}{% for b in s %}{% endfor %}{% endfor %}{% endif %}", lim)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	done := make(chan error, 1)
	go func() {
		_, _, _, err := renderKind(r, ctx, "slow")
		done <- err
	}()
	select {
	case err := <-done:
		var re *RenderError
		if !errors.As(err, &re) || re.Kind != ErrCanceled || !errors.Is(err, context.Canceled) {
			t.Fatalf("error = %v, want ErrCanceled wrapping context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the render did not end when its context was canceled")
	}
	ctx, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	if _, kind, _, err := renderKind(r, ctx, "slow"); kind != ErrCanceled || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("with a 100 ms deadline: %v, want ErrCanceled wrapping DeadlineExceeded", err)
	}
	if out, _, _, err := renderKind(r, context.Background(), "go"); err != nil || out != "ok" {
		t.Errorf("next render = %q, %v; want ok", out, err)
	}
}

// A worker killed from outside fails only the render it was doing.
func TestRendererWorkerKilled(t *testing.T) {
	r := newTestRenderer(t, "{{ messages[0].content }}", Limits{Workers: 1})
	w := <-r.idle
	w.cmd.Process.Kill()
	<-w.waited
	r.idle <- w
	if _, kind, _, err := renderKind(r, context.Background(), "a"); kind != ErrWorker {
		t.Fatalf("render on a dead worker: %v, want ErrWorker", err)
	}
	if out, _, _, err := renderKind(r, context.Background(), "b"); err != nil || out != "b" {
		t.Errorf("next render = %q, %v; want b", out, err)
	}
}

// 64 concurrent requests on 2 workers, every 8th crashing its worker:
// each gets its own answer.
func TestRendererConcurrent(t *testing.T) {
	r := newTestRenderer(t, "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}"+
		"{% if messages[0].content == 'crash' %}{{ f(0) }}{% else %}<{{ messages[0].content }}>{% endif %}", testLimits)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			content := fmt.Sprint(i)
			if i%8 == 0 {
				content = "crash"
			}
			out, kind, bound, err := renderKind(r, context.Background(), content)
			switch {
			case content == "crash" && (kind != ErrLimit || bound != BoundRecursion):
				errs <- fmt.Errorf("request %d: %v, want the recursion bound", i, err)
			case content != "crash" && (err != nil || out != "<"+content+">"):
				errs <- fmt.Errorf("request %d: %q, %v", i, out, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	r.mu.Lock()
	live := len(r.live)
	r.mu.Unlock()
	if live > 2 {
		t.Errorf("%d live workers, want at most 2", live)
	}
}

func TestRendererClose(t *testing.T) {
	r := newTestRenderer(t, "{{ messages[0].content }}", Limits{})
	r.Close()
	if _, kind, _, err := renderKind(r, context.Background(), "a"); kind != ErrWorker {
		t.Errorf("render after Close: %v, want ErrWorker", err)
	}
	r.Close()
}

// An executable that is not a worker fails at start with a hint.
func TestStartWorkerNotAWorker(t *testing.T) {
	for _, exe := range []string{"/bin/true", "/bin/cat"} {
		if _, err := os.Stat(exe); err != nil {
			t.Skipf("no %s", exe)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		w, err := startWorker(ctx, exe, hello{Source: "x"})
		cancel()
		if err == nil {
			w.kill()
			t.Errorf("%s started as a worker", exe)
		} else if !strings.Contains(err.Error(), "RunWorker") {
			t.Errorf("%s: error %q does not point at RunWorker", exe, err)
		}
	}
}
