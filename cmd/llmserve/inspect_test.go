package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"llmserve/gguf"
	"llmserve/internal/shared"
)

// TestInspectShared runs inspect on every GGUF file of the shared data.
func TestInspectShared(t *testing.T) {
	for _, p := range shared.Glob(t, "*/*.gguf") {
		f, err := gguf.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := inspect(&b, f, p, true); err != nil {
			t.Errorf("%s: %v", p, err)
		}
		f.Close()
		if !strings.Contains(b.String(), "tokenizer: ") {
			t.Errorf("%s: no tokenizer line:\n%s", p, b.String())
		}
	}
}

// TestInspectMalformed checks that a damaged file gives one error line.
func TestInspectMalformed(t *testing.T) {
	src, err := os.ReadFile(shared.Path(t, "models/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cut.gguf")
	if err := os.WriteFile(path, src[:5000], 0o644); err != nil {
		t.Fatal(err)
	}
	err = inspectCmd([]string{path})
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "cut.gguf") {
		t.Errorf("inspect of a cut file: err = %v, want one line naming the file", err)
	}
}
