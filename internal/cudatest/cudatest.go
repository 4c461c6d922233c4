// Package cudatest lets a package's CUDA test binary (built with -tags cuda)
// run on a machine without a usable GPU: its TestMain asks Skip to leave out
// the tests that need the device, those of the package's *_cuda_test.go
// files, and says so, while the package's other tests still run. Where the
// GPU must be there (a GPU machine's test run), LLMSERVE_CUDA_REQUIRED=1
// turns the missing device into a failure.
package cudatest

import (
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Required reports whether LLMSERVE_CUDA_REQUIRED=1 asks for a GPU.
func Required() bool { return os.Getenv("LLMSERVE_CUDA_REQUIRED") == "1" }

// DeviceTests returns the names of the Test, Benchmark, Fuzz and Example
// functions declared in dir's *_cuda_test.go files, sorted.
func DeviceTests(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_cuda_test.go"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no *_cuda_test.go files in %s", dir)
	}
	var names []string
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Name.Name == "TestMain" {
				continue
			}
			for _, prefix := range []string{"Test", "Benchmark", "Fuzz", "Example"} {
				if strings.HasPrefix(fn.Name.Name, prefix) {
					names = append(names, fn.Name.Name)
					break
				}
			}
		}
	}
	sort.Strings(names)
	return names, nil
}

// Skip is for a TestMain whose device did not open (why): with
// LLMSERVE_CUDA_REQUIRED=1 it returns an error; otherwise it sets
// -test.skip to the device tests of the working directory (where go test
// runs a package's binary) and writes which it left out to w. When those
// cannot be listed it leaves out every test. Call it before m.Run.
func Skip(w io.Writer, pkg string, why error) error {
	if Required() {
		return fmt.Errorf("%s: LLMSERVE_CUDA_REQUIRED=1 but no usable CUDA device: %w", pkg, why)
	}
	if !flag.Parsed() {
		flag.Parse()
	}
	names, err := DeviceTests(".")
	if err != nil {
		fmt.Fprintf(w, "%s: SKIP: no usable CUDA device (%v); the device tests cannot be listed (%v): skipping every test\n", pkg, why, err)
		return flag.Set("test.run", "^$")
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	pattern := "^(" + strings.Join(quoted, "|") + ")$"
	if cur := flag.Lookup("test.skip"); cur == nil {
		return errors.New("cudatest: no -test.skip flag (not a test binary?)")
	} else if v := cur.Value.String(); v != "" {
		pattern = v + "|" + pattern
	}
	fmt.Fprintf(w, "%s: SKIP: no usable CUDA device (%v): skipping its %d device tests (%s); set LLMSERVE_CUDA_REQUIRED=1 to fail instead\n",
		pkg, why, len(names), strings.Join(names, ", "))
	return flag.Set("test.skip", pattern)
}
