package chat

import (
	"runtime"
	"time"
)

// Limits bound one render. A zero field takes its default.
type Limits struct {
	// Timeout is the longest one render may run (default 2 s); the
	// request's context can end it sooner.
	Timeout time.Duration

	// MaxOutput is the largest prompt a render may produce, in bytes
	// (default 4 MiB).
	MaxOutput int

	// MaxRange is how many items all range() calls of one render may
	// produce together (default 100000). It bounds loops over ranges,
	// nested ones included, before any list is built.
	MaxRange int

	// MaxMemory is how much address space a worker process may map
	// beyond what it holds at start, in bytes (default 512 MiB). Only
	// Linux enforces it; elsewhere the render time bounds memory too.
	MaxMemory int64

	// MaxStack is the largest goroutine stack of a worker process, in
	// bytes (default 16 MiB); it bounds template recursion.
	MaxStack int

	// Workers is the number of worker processes, and so of renders
	// that run at once (default GOMAXPROCS, at most 4).
	Workers int

	// InProcess renders in this process instead of in workers. Only
	// range() and the output size stay bounded; a recursive template
	// then crashes the process. For tests and trusted templates.
	InProcess bool
}

// Defaults of Limits.
const (
	DefaultTimeout   = 2 * time.Second
	DefaultMaxOutput = 4 << 20
	DefaultMaxRange  = 100_000
	DefaultMaxMemory = 512 << 20
	DefaultMaxStack  = 16 << 20
)

// withDefaults returns l with every zero or negative field set to its
// default.
func (l Limits) withDefaults() Limits {
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	if l.MaxOutput <= 0 {
		l.MaxOutput = DefaultMaxOutput
	}
	if l.MaxRange <= 0 {
		l.MaxRange = DefaultMaxRange
	}
	if l.MaxMemory <= 0 {
		l.MaxMemory = DefaultMaxMemory
	}
	if l.MaxStack <= 0 {
		l.MaxStack = DefaultMaxStack
	}
	if l.Workers <= 0 {
		l.Workers = min(4, runtime.GOMAXPROCS(0))
	}
	return l
}
