package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"llmserve/gguf"
)

// TestSynthCommand runs the subcommand and checks the file it writes, and
// that bad flags fail without leaving a file.
func TestSynthCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "m.gguf")
	if err := run([]string{"synth", "--arch", "qwen2", "--shape", "tiny", "--type", "q8_0", "--seed", "3", "-o", out}); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if arch, _ := f.String("general.architecture"); arch != "qwen2" {
		t.Errorf("general.architecture = %q, want qwen2", arch)
	}
	if ft, _ := f.Uint32("general.file_type"); ft != 7 {
		t.Errorf("general.file_type = %d, want 7 (Q8_0)", ft)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--type", "Q9"}, `unknown file type "Q9"`},
		{[]string{"--arch", "gpt2"}, `unknown architecture "gpt2"`},
		{[]string{"--vocab", filepath.Join(t.TempDir(), "none.gguf")}, "vocabulary"},
	} {
		bad := filepath.Join(t.TempDir(), "bad.gguf")
		err := run(append([]string{"synth", "-o", bad}, tt.args...))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: error %v, want one containing %q", tt.args, err, tt.want)
		}
		if _, err := os.Stat(bad); err == nil {
			t.Errorf("%v: left %s behind", tt.args, bad)
		}
	}
	if err := run([]string{"synth"}); err == nil || !strings.Contains(err.Error(), "-o") {
		t.Errorf("without -o: error %v, want one that asks for -o", err)
	}
}
