//go:build cuda

package main

import (
	"fmt"

	"llmserve/internal/cuda"
)

// checkGPUs checks that this host has n GPUs by opening the last of them.
func checkGPUs(n int) error {
	c, err := cuda.Open(n - 1)
	if err != nil {
		return fmt.Errorf("%d GPUs needed: %w", n, err)
	}
	return c.Close()
}
