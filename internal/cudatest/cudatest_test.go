package cudatest

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestDeviceTests(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a_cuda_test.go": "//go:build cuda\n\npackage p\n\nimport \"testing\"\n\nfunc TestMain(m *testing.M) {}\nfunc TestGPU(t *testing.T) {}\nfunc BenchmarkGPU(b *testing.B) {}\nfunc helper() {}\ntype x struct{}\nfunc (x) TestMethod() {}\n",
		"b_cuda_test.go": "package p\n\nfunc TestOther(t *testing.T) {}\n",
		"c_test.go":      "package p\n\nfunc TestCPU(t *testing.T) {}\n",
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := DeviceTests(dir)
	if want := []string{"BenchmarkGPU", "TestGPU", "TestOther"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("DeviceTests = %v, %v; want %v", got, err, want)
	}
	if _, err := DeviceTests(t.TempDir()); err == nil {
		t.Errorf("a folder without cuda tests: no error")
	}
}

func TestSkipRequired(t *testing.T) {
	t.Setenv("LLMSERVE_CUDA_REQUIRED", "1")
	var out strings.Builder
	err := Skip(&out, "p", errors.New("no device"))
	if err == nil || !strings.Contains(err.Error(), "LLMSERVE_CUDA_REQUIRED") {
		t.Errorf("Skip with the GPU required: %v", err)
	}
}
