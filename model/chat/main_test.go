package chat

import (
	"os"
	"testing"
)

// TestMain lets this test binary serve as the Renderer's worker process.
func TestMain(m *testing.M) {
	if code, ok := RunWorker(); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}
