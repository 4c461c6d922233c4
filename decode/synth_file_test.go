package decode

import (
	"os"
	"path/filepath"
	"testing"

	"llmserve/model"
	"llmserve/model/synth"
)

// openSynth writes a synthetic model of cfg in fileType with seed to a
// file of t's temporary folder and opens it (closed when t ends).
func openSynth(t testing.TB, cfg synth.Config, fileType string, seed uint64) *model.Model {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.gguf")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := synth.Write(out, synth.Options{Config: cfg, FileType: fileType, Seed: seed}); err != nil {
		out.Close()
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	f, m, err := model.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return m
}
