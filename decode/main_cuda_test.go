//go:build cuda

package decode

import (
	"fmt"
	"os"
	"testing"

	"llmserve/internal/cudatest"
	"llmserve/kernels"
)

// TestMain checks that a CUDA device opens; without one the GPU engine's
// tests are skipped (cudatest.Skip) and the CPU tests still run.
func TestMain(m *testing.M) {
	dev, err := kernels.OpenDevice(0)
	if err != nil {
		if err := cudatest.Skip(os.Stdout, "decode", err); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	} else if err := dev.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "decode: closing the probe device:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
