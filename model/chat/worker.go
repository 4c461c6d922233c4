package chat

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"time"
)

// workerEnv marks a process started as a template worker.
const workerEnv = "LLMSERVE_CHAT_WORKER"

// RunWorker serves template renders on stdin and stdout when this process
// was started as a worker of a Renderer, and returns the exit code and
// true once its parent closes stdin; otherwise it returns at once with
// false. Call it first in main and in the TestMain of every package whose
// tests render through a Renderer:
//
//	if code, ok := chat.RunWorker(); ok {
//		os.Exit(code)
//	}
func RunWorker() (code int, isWorker bool) {
	if os.Getenv(workerEnv) != "1" {
		return 0, false
	}
	go exitWithParent(os.Getppid())
	if err := serveWorker(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "chat worker:", err)
		return 1, true
	}
	return 0, true
}

// exitWithParent ends this worker once its parent is gone, even in the
// middle of a render that would never end: a parent that died cannot kill
// it.
func exitWithParent(ppid int) {
	for {
		time.Sleep(time.Second)
		if os.Getppid() != ppid {
			os.Exit(2)
		}
	}
}

// serveWorker reads a hello, applies its bounds to this process, then
// renders each request. It returns nil when in ends.
func serveWorker(in io.Reader, out io.Writer) error {
	dec := json.NewDecoder(bufio.NewReaderSize(in, 64<<10))
	w := bufio.NewWriterSize(out, 64<<10)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	send := func(r reply) error {
		if err := enc.Encode(r); err != nil {
			return err
		}
		return w.Flush()
	}

	var h hello
	if err := dec.Decode(&h); err != nil {
		return fmt.Errorf("read hello: %w", err)
	}
	lim := Limits{MaxOutput: h.MaxOutput, MaxRange: h.MaxRange, MaxMemory: h.MaxMemory, MaxStack: h.MaxStack}.withDefaults()
	tmpl, err := New(h.Source)
	if err != nil {
		return send(reply{Err: failf(ErrTemplate, "%v", err)})
	}
	if err := confine(lim); err != nil {
		return send(reply{Err: failf(ErrWorker, "%v", err)})
	}
	if err := send(reply{Out: "ready"}); err != nil {
		return err
	}
	for {
		var req request
		if err := dec.Decode(&req); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("read request: %w", err)
		}
		out, rerr := tmpl.render(req.Messages, req.options(), lim)
		if err := send(reply{Out: out, Err: rerr}); err != nil {
			return err
		}
	}
}

// confine bounds this process: the goroutine stack (a recursive template
// ends in a stack overflow, which kills only the worker), the heap the
// collector aims for, and, where the system allows, the address space.
func confine(lim Limits) error {
	debug.SetMaxStack(lim.MaxStack)
	debug.SetMemoryLimit(lim.MaxMemory / 2)
	if raceBuild {
		return nil // the race detector's shadow memory needs the address space
	}
	return limitAddressSpace(lim.MaxMemory)
}
