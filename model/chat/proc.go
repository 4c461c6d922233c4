package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// startTimeout bounds how long a new worker may take to say it is ready.
const startTimeout = 10 * time.Second

// worker is one worker process, used by one render at a time.
type worker struct {
	cmd     *exec.Cmd
	stdin   *os.File      // requests to the worker
	wmu     sync.Mutex    // guards enc: a write may outlast its reply
	enc     *json.Encoder // writes to stdin
	replies chan reply    // replies read from stdout; closed when it ends
	stderr  *tail         // the end of what the worker wrote to stderr
	waited  chan struct{} // closed once the process has been reaped
}

// startWorker runs exe as a worker for lim and h.Source and waits until it
// is ready.
func startWorker(ctx context.Context, exe string, h hello) (*worker, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	w := &worker{
		cmd:     exec.Command(exe),
		stdin:   inW,
		enc:     json.NewEncoder(inW),
		replies: make(chan reply, 1),
		stderr:  &tail{max: 2 << 10},
		waited:  make(chan struct{}),
	}
	w.cmd.Env = append(os.Environ(), workerEnv+"=1")
	w.cmd.Stdin, w.cmd.Stdout, w.cmd.Stderr = inR, outW, w.stderr
	err = w.cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("start %s: %w", exe, err)
	}
	go w.read(outR)
	go func() {
		w.cmd.Wait()
		close(w.waited)
	}()

	go w.send(h) // the worker reads it before anything else
	rep, err := w.await(ctx, startTimeout)
	var re *RenderError
	switch {
	case errors.As(err, &re) && re.Kind == ErrWorker:
		return nil, fmt.Errorf("%s exited before it was ready (does main call chat.RunWorker first?): %w", exe, err)
	case err != nil:
		return nil, err
	case rep.Err != nil:
		w.kill()
		return nil, rep.Err
	case rep.Out != "ready":
		w.kill()
		return nil, fmt.Errorf("worker %s answered %.80q, not ready: does main call chat.RunWorker first?", exe, rep.Out)
	}
	return w, nil
}

// read forwards the worker's replies until its stdout ends or carries
// something else than replies.
func (w *worker) read(out *os.File) {
	defer out.Close()
	defer close(w.replies)
	dec := json.NewDecoder(out)
	for {
		var rep reply
		if err := dec.Decode(&rep); err != nil {
			return
		}
		w.replies <- rep
	}
}

// send writes one value to the worker.
func (w *worker) send(v any) {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	w.enc.Encode(v)
}

// render sends req and waits for the reply at most timeout.
func (w *worker) render(ctx context.Context, timeout time.Duration, req *request) (reply, error) {
	go w.send(req) // fails only when the worker is gone, which await sees
	return w.await(ctx, timeout)
}

// await waits for the next reply. On a timeout, on the end of ctx or when
// the worker dies it kills the worker and returns a *RenderError.
func (w *worker) await(ctx context.Context, timeout time.Duration) (reply, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case rep, ok := <-w.replies:
		if ok {
			return rep, nil
		}
		w.kill()
		return reply{}, w.death()
	case <-timer.C:
		w.kill()
		return reply{}, limitf(BoundTime, "the render ran longer than %v", timeout)
	case <-ctx.Done():
		w.kill()
		return reply{}, &RenderError{Kind: ErrCanceled, Msg: ctx.Err().Error(), Err: ctx.Err()}
	}
}

// death says why the worker's process ended, from what it wrote last.
func (w *worker) death() *RenderError {
	msg := w.stderr.String()
	switch {
	case strings.Contains(msg, "stack overflow") || strings.Contains(msg, "stack exceeds"):
		return limitf(BoundRecursion, "the template recursed too deep")
	case strings.Contains(msg, "out of memory") || strings.Contains(msg, "cannot allocate memory") ||
		strings.Contains(msg, "failed to create new OS thread") || strings.Contains(msg, "address space") ||
		strings.Contains(msg, "runtime.(*mheap).sysAlloc"):
		return limitf(BoundMemory, "the template needed too much memory")
	}
	last := strings.TrimSpace(msg)
	if i := strings.LastIndexByte(last, '\n'); i >= 0 {
		last = last[i+1:]
	}
	return &RenderError{Kind: ErrWorker, Msg: fmt.Sprintf("template worker died (%v): %s", w.cmd.ProcessState, last)}
}

// kill ends the process and waits until it is reaped, so that its stderr
// has been read.
func (w *worker) kill() {
	w.stdin.Close()
	if w.cmd.Process != nil {
		w.cmd.Process.Kill()
	}
	<-w.waited
}

// tail keeps the first max bytes written to it, where the Go runtime
// says why it died, and the last max.
type tail struct {
	mu   sync.Mutex // guards head and end
	head []byte     // the first max bytes
	end  []byte     // at most 2*max bytes that followed, the newest last
	max  int
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if room := t.max - len(t.head); room > 0 {
		k := min(room, len(p))
		t.head, p = append(t.head, p[:k]...), p[k:]
	}
	t.end = append(t.end, p...)
	if len(t.end) > 2*t.max {
		t.end = append(t.end[:0], t.end[len(t.end)-t.max:]...)
	}
	return n, nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.head) + string(t.end)
}

// errClosed is returned by a closed Renderer.
var errClosed = errors.New("chat: renderer closed")
