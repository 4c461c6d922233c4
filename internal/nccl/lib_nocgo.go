//go:build !cgo

package nccl

import (
	"errors"
	"fmt"
)

// ErrNotFound is wrapped by Open when no library could be loaded.
var ErrNotFound = errors.New("nccl: library not found")

// Lib is a loaded NCCL; without cgo none can be loaded.
type Lib struct{}

// Comm is one rank's communicator.
type Comm struct{}

// Open always fails: loading NCCL needs cgo (dlopen).
func Open(path string) (*Lib, error) {
	return nil, fmt.Errorf("%w: this binary was built without cgo, which loading %s needs", ErrNotFound, LibName)
}

// Close does nothing.
func (l *Lib) Close() error { return nil }

// Path is empty: nothing was loaded.
func (l *Lib) Path() string { return "" }
