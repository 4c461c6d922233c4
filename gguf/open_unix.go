//go:build unix

package gguf

import (
	"fmt"
	"os"
	"syscall"
)

// Open memory-maps the file at path read-only and parses it. Close releases
// the mapping.
func Open(path string) (*File, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	size := st.Size()
	if size == 0 {
		return nil, fmt.Errorf("gguf: %s: empty file", path)
	}
	if size != int64(int(size)) {
		return nil, fmt.Errorf("gguf: %s: %d bytes is too large to map", path, size)
	}
	data, err := syscall.Mmap(int(fd.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("gguf: mmap %s: %w", path, err)
	}
	f, err := parse(data)
	if err != nil {
		syscall.Munmap(data)
		return nil, fmt.Errorf("gguf: %s: %w", path, err)
	}
	f.unmap = func() error { return syscall.Munmap(data) }
	return f, nil
}
