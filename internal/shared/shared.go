// Package shared locates the read-only reference data (models, vocabularies,
// golden outputs) that tests use. The data lives beside the repository in
// ../shared, or wherever LLMSERVE_SHARED points; tests skip when it is absent.
package shared

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the shared data folder, or an error when there is none.
func Dir() (string, error) {
	if d := os.Getenv("LLMSERVE_SHARED"); d != "" {
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
			return "", errors.New("no shared data folder at " + d)
		}
		if filepath.Dir(dir) == dir {
			return "", errors.New("no go.mod above " + wd)
		}
	}
}

// Path returns the path of rel inside the shared data folder, skipping the
// test with a message when the folder or the file is absent.
func Path(t testing.TB, rel string) string {
	t.Helper()
	d, err := Dir()
	if err != nil {
		t.Skipf("shared data not available (%v): skipping", err)
	}
	p := filepath.Join(d, rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared file %s not available: skipping", p)
	}
	return p
}
