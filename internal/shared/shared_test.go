package shared

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// outcome records how a helper ended a test: the message of its Skipf or
// Fatalf, or neither.
type outcome struct {
	testing.TB
	skipped, failed string
}

func (o *outcome) Helper() {}

func (o *outcome) Skipf(format string, args ...any) {
	o.skipped = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (o *outcome) Fatalf(format string, args ...any) {
	o.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls fn with an outcome in its own goroutine, as the testing package
// runs a test, so that Skipf and Fatalf can end it.
func run(t *testing.T, fn func(tb testing.TB)) *outcome {
	o := &outcome{TB: t}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		fn(o)
	}()
	wg.Wait()
	return o
}

func TestPathAndGlob(t *testing.T) {
	data := t.TempDir()
	if err := os.MkdirAll(filepath.Join(data, "models"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "models", "a.gguf"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		env    string // LLMSERVE_SHARED
		fn     func(tb testing.TB)
		result string // "pass", "skip" or "fail"
	}{
		{"file present", data, func(tb testing.TB) { Path(tb, "models/a.gguf") }, "pass"},
		{"file missing", data, func(tb testing.TB) { Path(tb, "models/b.gguf") }, "fail"},
		{"folder named but missing", filepath.Join(data, "none"), func(tb testing.TB) { Path(tb, "models/a.gguf") }, "fail"},
		{"glob matches", data, func(tb testing.TB) {
			if n := len(Glob(tb, "models/*.gguf")); n != 1 {
				tb.Fatalf("%d matches", n)
			}
		}, "pass"},
		{"glob matches nothing", data, func(tb testing.TB) { Glob(tb, "golden/*.gguf") }, "fail"},
	}
	for _, tt := range tests {
		t.Setenv("LLMSERVE_SHARED", tt.env)
		o := run(t, tt.fn)
		got := "pass"
		switch {
		case o.failed != "":
			got = "fail"
		case o.skipped != "":
			got = "skip"
		}
		if got != tt.result {
			t.Errorf("%s: %s (skip %q, fail %q), want %s", tt.name, got, o.skipped, o.failed, tt.result)
		}
	}
}

// TestAbsentFolderSkips runs from a module without a shared folder beside it.
func TestAbsentFolderSkips(t *testing.T) {
	root := t.TempDir()
	mod := filepath.Join(root, "repo")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LLMSERVE_SHARED", "")
	t.Chdir(mod)
	for _, fn := range []func(tb testing.TB){
		func(tb testing.TB) { Path(tb, "models/a.gguf") },
		func(tb testing.TB) { Glob(tb, "*.gguf") },
	} {
		if o := run(t, fn); o.skipped == "" || o.failed != "" {
			t.Errorf("without the folder: skip %q, fail %q; want a skip", o.skipped, o.failed)
		}
	}
}
