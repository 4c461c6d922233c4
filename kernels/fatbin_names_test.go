//go:build cuda

package kernels

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"testing"
)

// TestFatbinKernelNames checks, without a device, that every embedded fat
// binary holds every kernel OpenDevice looks up in it, for every compiled
// architecture (cuobjdump -symbols; skipped where the CUDA toolkit is not
// installed). A missing name would stop OpenDevice, so no GPU step could run.
func TestFatbinKernelNames(t *testing.T) {
	tool, err := exec.LookPath("cuobjdump")
	if err != nil {
		t.Skip("cuobjdump not found (CUDA toolkit not installed)")
	}
	entry := regexp.MustCompile(`STB_GLOBAL\s+STO_ENTRY\s+(\S+)`)
	arch := regexp.MustCompile(`arch = (sm_\d+)`)
	for mod, names := range kernelNames {
		t.Run(mod, func(t *testing.T) {
			image, err := fatbins.ReadFile(path.Join("fatbin", mod+".fatbin"))
			if err != nil {
				t.Fatal(err)
			}
			f := filepath.Join(t.TempDir(), mod+".fatbin")
			if err := os.WriteFile(f, image, 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(tool, "-symbols", f).CombinedOutput()
			if err != nil {
				t.Fatalf("cuobjdump: %v\n%s", err, out)
			}
			// Entries per architecture section, in the order cuobjdump lists them.
			have := map[string]map[string]bool{}
			cur := ""
			for _, line := range regexp.MustCompile(`\n`).Split(string(out), -1) {
				if m := arch.FindStringSubmatch(line); m != nil {
					cur = m[1]
					if have[cur] == nil {
						have[cur] = map[string]bool{}
					}
				}
				if m := entry.FindStringSubmatch(line); m != nil && cur != "" {
					have[cur][m[1]] = true
				}
			}
			if len(have) == 0 {
				t.Fatalf("no architecture sections in %s.fatbin", mod)
			}
			want := moduleKernels(mod, names)
			if len(want) == 0 {
				t.Fatalf("module %s lists no kernels", mod)
			}
			for a, entries := range have {
				for _, name := range want {
					if !entries[name] {
						t.Errorf("%s.fatbin (%s) has no kernel %s", mod, a, name)
					}
				}
			}
		})
	}
}
