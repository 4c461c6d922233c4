package chat

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"
)

// Renderer renders one template within Limits. A Jinja template runs in
// worker processes (this executable, re-run; see RunWorker), so that a
// template that recurses without end, allocates without end or runs too
// long fails its own request and takes down only a worker, which is then
// replaced. Built-in formats run in process. Safe for concurrent use.
type Renderer struct {
	tmpl *Template
	lim  Limits
	exe  string // the executable workers run

	sem  chan struct{} // one token per render in progress, Workers at most
	idle chan *worker  // ready workers; cap Workers

	mu     sync.Mutex           // guards closed and live
	closed bool                 // Close was called
	live   map[*worker]struct{} // every worker not yet killed
}

// NewRenderer returns a Renderer of t. Unless t is built in or
// lim.InProcess is set, it starts one worker at once, so that a binary
// whose main does not call RunWorker fails here, and more on demand.
func NewRenderer(t *Template, lim Limits) (*Renderer, error) {
	lim = lim.withDefaults()
	r := &Renderer{tmpl: t, lim: lim, sem: make(chan struct{}, lim.Workers),
		idle: make(chan *worker, lim.Workers), live: map[*worker]struct{}{}}
	if t.builtin != nil || lim.InProcess {
		return r, nil
	}
	if os.Getenv(workerEnv) != "" {
		return nil, fmt.Errorf("chat: a template worker starts no workers (%s is set): call chat.RunWorker first in main", workerEnv)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("chat: find the executable for template workers: %w", err)
	}
	r.exe = exe
	w, err := r.start(context.Background())
	if err != nil {
		return nil, fmt.Errorf("chat: start a template worker: %w", err)
	}
	r.idle <- w
	return r, nil
}

// Template returns the template r renders.
func (r *Renderer) Template() *Template { return r.tmpl }

// Render formats msgs into a prompt. It fails with a *RenderError when the
// template rejects the conversation, breaks a bound, or ctx ends first
// (within Limits.Timeout, the render time, and ctx's deadline).
func (r *Renderer) Render(ctx context.Context, msgs []Message, opts Options) (string, error) {
	if r.tmpl.builtin != nil || r.lim.InProcess {
		out, rerr := r.tmpl.render(msgs, opts, r.lim)
		if rerr != nil {
			return "", rerr
		}
		return out, nil
	}
	req, rerr := newRequest(msgs, opts)
	if rerr != nil {
		return "", rerr
	}
	select {
	case r.sem <- struct{}{}:
	case <-ctx.Done():
		return "", &RenderError{Kind: ErrCanceled, Msg: ctx.Err().Error(), Err: ctx.Err()}
	}
	defer func() { <-r.sem }()

	start := time.Now()
	w, err := r.get(ctx)
	if err != nil {
		return "", err
	}
	rep, err := w.render(ctx, r.lim.Timeout-time.Since(start), req)
	if err != nil {
		r.drop(w)
		return "", err
	}
	r.put(w)
	if rep.Err != nil {
		return "", rep.Err
	}
	return rep.Out, nil
}

// get returns an idle worker or starts one.
func (r *Renderer) get(ctx context.Context) (*worker, error) {
	select {
	case w := <-r.idle:
		return w, nil
	default:
	}
	w, err := r.start(ctx)
	if err != nil {
		if re, ok := err.(*RenderError); ok {
			return nil, re
		}
		return nil, &RenderError{Kind: ErrWorker, Msg: "start a template worker: " + err.Error(), Err: err}
	}
	return w, nil
}

// start starts a worker and records it as live.
func (r *Renderer) start(ctx context.Context) (*worker, error) {
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return nil, errClosed
	}
	w, err := startWorker(ctx, r.exe, hello{Source: r.tmpl.src, MaxOutput: r.lim.MaxOutput,
		MaxRange: r.lim.MaxRange, MaxMemory: r.lim.MaxMemory, MaxStack: r.lim.MaxStack})
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		w.kill()
		return nil, errClosed
	}
	r.live[w] = struct{}{}
	return w, nil
}

// put returns a healthy worker to the idle ones.
func (r *Renderer) put(w *worker) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		delete(r.live, w)
		w.kill()
		return
	}
	r.idle <- w // never blocks: at most Workers workers are out
}

// drop forgets a worker that has been killed.
func (r *Renderer) drop(w *worker) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.live, w)
}

// Close stops the workers; renders in progress fail. It is safe to call
// more than once.
func (r *Renderer) Close() error {
	r.mu.Lock()
	r.closed = true
	live := r.live
	r.live = map[*worker]struct{}{}
	r.mu.Unlock()
	for w := range live {
		w.kill()
	}
	return nil
}
