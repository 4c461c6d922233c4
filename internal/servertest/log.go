package servertest

import (
	"bytes"
	"sync"
)

// Log collects a process's stdout and stderr as they arrive.
type Log struct {
	mu  sync.Mutex   // guards buf
	buf bytes.Buffer // everything written so far
}

// Write appends p.
func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// String returns everything written so far.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Tail returns the last n bytes written (all of them when fewer).
func (l *Log) Tail(n int) string {
	return Tail(l.String(), n)
}

// Tail returns the last n bytes of s.
func Tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
