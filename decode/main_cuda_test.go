//go:build cuda

package decode

import (
	"fmt"
	"os"
	"testing"

	"llmserve/internal/cuda"
	"llmserve/internal/cudatest"
)

// TestMain checks that a CUDA device opens; without one the GPU engine's
// tests are skipped (cudatest.Skip) and the CPU tests still run.
func TestMain(m *testing.M) {
	ctx, err := cuda.Open(0)
	if err != nil {
		if err := cudatest.Skip(os.Stdout, "decode", err); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	} else if err := ctx.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "decode: closing the probe context:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
