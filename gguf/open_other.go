//go:build !unix

package gguf

import (
	"fmt"
	"os"
)

// Open reads and parses the file at path (no memory map on this platform).
func Open(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	f, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("gguf: %s: %w", path, err)
	}
	return f, nil
}
