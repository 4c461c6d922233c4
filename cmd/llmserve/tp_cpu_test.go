//go:build !cuda

package main

import (
	"strings"
	"testing"

	"llmserve/internal/shared"
	"llmserve/model"
)

// TestCheckTPNoGPU: a build without the GPU engine refuses -tp 2 by
// saying so, after the model's shapes pass.
func TestCheckTPNoGPU(t *testing.T) {
	f, m, err := model.Open(shared.Path(t, "models/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = checkTP(m, tpOptions{Ranks: 2}, -1)
	if err == nil || !strings.Contains(err.Error(), "-tp 2: this build has no GPU support") {
		t.Fatalf("checkTP: %v, want the missing GPU support named", err)
	}
}
