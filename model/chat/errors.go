package chat

import "fmt"

// ErrorKind says why a render failed; it decides who is at fault.
type ErrorKind int

const (
	// ErrRejected: the template called raise_exception, so the
	// conversation does not suit it (a client error, HTTP 400).
	ErrRejected ErrorKind = iota + 1
	// ErrInput: the messages or options cannot be given to the
	// template, e.g. tool-call arguments that are not JSON (HTTP 400).
	ErrInput
	// ErrTemplate: the template failed on its own (a type error, a
	// method the engine lacks, an engine panic) (HTTP 500).
	ErrTemplate
	// ErrLimit: the render passed a bound of Limits; Bound names it
	// (HTTP 500).
	ErrLimit
	// ErrWorker: a worker process could not start or died of something
	// other than a bound (HTTP 500).
	ErrWorker
	// ErrCanceled: the request's context ended first; Unwrap gives the
	// context's error.
	ErrCanceled
)

// Bounds a render can pass (RenderError.Bound).
const (
	BoundTime      = "time"      // Limits.Timeout
	BoundOutput    = "output"    // Limits.MaxOutput
	BoundRange     = "range"     // Limits.MaxRange
	BoundMemory    = "memory"    // Limits.MaxMemory
	BoundRecursion = "recursion" // Limits.MaxStack
)

func (k ErrorKind) String() string {
	switch k {
	case ErrRejected:
		return "rejected"
	case ErrInput:
		return "input"
	case ErrTemplate:
		return "template"
	case ErrLimit:
		return "limit"
	case ErrWorker:
		return "worker"
	case ErrCanceled:
		return "canceled"
	}
	return fmt.Sprintf("ErrorKind(%d)", int(k))
}

// RenderError is the error of every failed render.
type RenderError struct {
	Kind  ErrorKind
	Bound string // with ErrLimit: BoundTime, BoundOutput, ...
	Msg   string // what happened, for the client or the log
	Err   error  `json:"-"` // the cause, if any (the context's error with ErrCanceled)
}

func (e *RenderError) Error() string {
	if e.Kind == ErrLimit {
		return fmt.Sprintf("chat: render: template passed the %s limit: %s", e.Bound, e.Msg)
	}
	return "chat: render: " + e.Msg
}

func (e *RenderError) Unwrap() error { return e.Err }

// ClientFault reports whether the request caused the failure (ErrRejected,
// ErrInput: HTTP 400) rather than the template or a bound (HTTP 500).
func (e *RenderError) ClientFault() bool { return e.Kind == ErrRejected || e.Kind == ErrInput }

// failf returns a RenderError of kind k.
func failf(k ErrorKind, format string, args ...any) *RenderError {
	return &RenderError{Kind: k, Msg: fmt.Sprintf(format, args...)}
}

// limitf returns a RenderError for a bound.
func limitf(bound, format string, args ...any) *RenderError {
	return &RenderError{Kind: ErrLimit, Bound: bound, Msg: fmt.Sprintf(format, args...)}
}
