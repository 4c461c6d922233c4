// Package shared locates the read-only reference data (models, vocabularies,
// golden outputs) that tests use. The data lives beside the repository in
// ../shared, or wherever LLMSERVE_SHARED points. Tests skip when the folder
// is absent (a fresh clone), and fail when it is there but lacks a file they
// expect: a half-present data set must not pass as a skipped or empty test.
package shared

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// ErrAbsent reports that there is no shared data folder beside the
// repository (and LLMSERVE_SHARED is unset).
var ErrAbsent = errors.New("no shared data folder")

// Dir returns the shared data folder. The error wraps ErrAbsent when there
// is none; LLMSERVE_SHARED naming a missing folder is another error.
func Dir() (string, error) {
	if d := os.Getenv("LLMSERVE_SHARED"); d != "" {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			return "", fmt.Errorf("LLMSERVE_SHARED=%s is not a folder", d)
		}
		return d, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			d := filepath.Join(filepath.Dir(dir), "shared")
			if st, err := os.Stat(d); err == nil && st.IsDir() {
				return d, nil
			}
			return "", fmt.Errorf("%w at %s", ErrAbsent, d)
		}
		if filepath.Dir(dir) == dir {
			return "", errors.New("no go.mod above " + wd)
		}
	}
}

// dir is Dir for a test: it skips the test when the folder is absent and
// fails it when the folder cannot be found for another reason.
func dir(t testing.TB) string {
	t.Helper()
	d, err := Dir()
	if errors.Is(err, ErrAbsent) {
		t.Skipf("shared data not available (%v): skipping", err)
	}
	if err != nil {
		t.Fatalf("shared data: %v", err)
	}
	return d
}

// Path returns the path of rel inside the shared data folder. It skips the
// test with a message when the folder is absent, and fails it when the
// folder is there but rel is not.
func Path(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(dir(t), rel)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("shared data: %s is missing (%v)", rel, err)
	}
	return p
}

// Glob returns the files of the shared data folder that match pattern
// (relative to the folder, filepath.Match syntax), sorted. It skips the test
// when the folder is absent and fails it when nothing matches, so that a
// loop over the result never runs zero cases.
func Glob(t testing.TB, pattern string) []string {
	t.Helper()
	d := dir(t)
	files, err := filepath.Glob(filepath.Join(d, pattern))
	if err != nil {
		t.Fatalf("shared data: pattern %q: %v", pattern, err)
	}
	if len(files) == 0 {
		t.Fatalf("shared data: no file matches %s in %s", pattern, d)
	}
	return files
}
