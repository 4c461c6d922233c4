package servertest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// built is the llmserve executable of this test process. It is the
// package's one piece of shared state: a test binary builds llmserve once
// however many tests ask, and Main removes the folder at the end.
var built struct {
	once   sync.Once
	inMain bool   // Main is running the tests, so the folder will be removed
	dir    string // the temporary folder of the build; "" until built
	path   string // dir/llmserve
	err    error  // why the build failed, with go build's output
}

// Main runs the package's tests and removes the binary Build made. Call it
// from TestMain in every package that calls Build:
//
//	func TestMain(m *testing.M) { servertest.Main(m) }
func Main(m *testing.M) {
	built.inMain = true
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// Build returns the path of llmserve built from llmserve/cmd/llmserve,
// building it on the first call of the test binary. A failed build fails
// every test that asks.
func Build(tb testing.TB) string {
	tb.Helper()
	if !built.inMain {
		tb.Fatal("servertest: Build needs TestMain to call servertest.Main (which removes the binary)")
	}
	built.once.Do(build)
	if built.err != nil {
		tb.Fatal(built.err)
	}
	return built.path
}

// build runs go build into a new temporary folder. go test puts its own
// go first on PATH, so the binary matches the test's toolchain.
func build() {
	dir, err := os.MkdirTemp("", "llmserve-test")
	if err != nil {
		built.err = fmt.Errorf("servertest: %w", err)
		return
	}
	built.dir, built.path = dir, filepath.Join(dir, "llmserve")
	out, err := exec.Command("go", "build", "-o", built.path, "llmserve/cmd/llmserve").CombinedOutput()
	if err != nil {
		built.err = fmt.Errorf("servertest: go build llmserve/cmd/llmserve: %v\n%s", err, out)
	}
}
