//go:build cgo

package nccl

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// stubSource is a stand-in libnccl: every function of the table (but
// ncclAllReduce when NO_ALLREDUCE is defined), with behaviour the tests
// can observe. Its all-reduce doubles host floats, to show the arguments
// pass through; its inits refuse to run unless NCCL_NVLS_ENABLE=0.
const stubSource = `
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
typedef struct { char internal[128]; } ncclUniqueId;
static int nvlsOff(void) { const char *v = getenv("NCCL_NVLS_ENABLE"); return v && strcmp(v, "0") == 0; }
int ncclGetVersion(int *v) { *v = 22105; return 0; }
int ncclGetUniqueId(ncclUniqueId *id) { memset(id->internal, 'a', sizeof id->internal); return 0; }
int ncclCommInitRank(void **comm, int n, ncclUniqueId id, int rank) {
	if (!nvlsOff()) return 5;
	if (id.internal[0] != 'a' || id.internal[127] != 'a') return 4;
	*comm = (void *)(intptr_t)(100 + rank);
	return 0;
}
int ncclCommInitAll(void **comms, int n, const int *devs) {
	if (!nvlsOff()) return 5;
	for (int i = 0; i < n; i++) comms[i] = (void *)(intptr_t)(200 + devs[i]);
	return 0;
}
#ifndef NO_ALLREDUCE
int ncclAllReduce(const void *send, void *recv, size_t count, int dt, int op, void *comm, void *stream) {
	if (dt != 7 || op != 0 || comm == 0) return 4;
	for (size_t i = 0; i < count; i++) ((float *)recv)[i] = 2 * ((const float *)send)[i];
	return 0;
}
#endif
static int depth;
int ncclGroupStart(void) { depth++; return 0; }
int ncclGroupEnd(void) { if (depth == 0) return 5; depth--; return 0; }
int ncclCommDestroy(void *comm) { return comm ? 0 : 4; }
const char *ncclGetErrorString(int r) {
	switch (r) { case 4: return "invalid argument"; case 5: return "invalid usage"; }
	return "stub error";
}
`

// buildStub compiles stubSource into a shared library with the C compiler
// cgo uses, or skips the test when there is none.
func buildStub(t *testing.T, defines ...string) string {
	t.Helper()
	cc := strings.Fields(goEnv(t, "CC"))
	if len(cc) == 0 {
		t.Skip("no C compiler (go env CC is empty): cannot build the stub NCCL")
	}
	if _, err := exec.LookPath(cc[0]); err != nil {
		t.Skipf("C compiler %s not found: cannot build the stub NCCL", cc[0])
	}
	dir := t.TempDir()
	src, lib := filepath.Join(dir, "stub.c"), filepath.Join(dir, "libnccl.so.2")
	if err := os.WriteFile(src, []byte(stubSource), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append(cc[1:], "-shared", "-fPIC", "-o", lib, src)
	for _, d := range defines {
		args = append(args, "-D"+d)
	}
	if out, err := exec.Command(cc[0], args...).CombinedOutput(); err != nil {
		t.Fatalf("building the stub: %v\n%s", err, out)
	}
	return lib
}

func goEnv(t *testing.T, key string) string {
	t.Helper()
	out, err := exec.Command("go", "env", key).Output()
	if err != nil {
		t.Skipf("go env %s: %v", key, err)
	}
	return strings.TrimSpace(string(out))
}

func TestOpenMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", LibName)
	_, err := Open(path)
	if err == nil || !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open(%s): %v, want ErrNotFound naming the path", path, err)
	}
}

func TestOpenMissingSymbol(t *testing.T) {
	lib := buildStub(t, "NO_ALLREDUCE")
	l, err := Open(lib)
	if err == nil {
		l.Close()
		t.Fatal("Open of a library without ncclAllReduce succeeded")
	}
	if !strings.Contains(err.Error(), "no symbol ncclAllReduce") {
		t.Errorf("Open: %v, want the missing symbol named", err)
	}
}

// TestStubCalls drives every function of the table through the stub.
func TestStubCalls(t *testing.T) {
	lib := buildStub(t)
	t.Setenv("NCCL_NVLS_ENABLE", "1") // Open's inits must turn it off
	l, err := Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if v, err := l.Version(); err != nil || v != 22105 {
		t.Errorf("Version: %d, %v; want 22105", v, err)
	}
	id, err := l.UniqueID()
	if err != nil {
		t.Fatal(err)
	}
	c, err := l.InitRank(2, id, 1)
	if err != nil {
		t.Fatalf("InitRank: %v", err)
	}
	if c.Rank() != 1 || c.Size() != 2 || uintptr(c.comm) != 101 {
		t.Errorf("InitRank: rank %d of %d, comm %v", c.Rank(), c.Size(), c.comm)
	}
	comms, err := l.InitAll([]int{3, 5})
	if err != nil {
		t.Fatalf("InitAll: %v", err)
	}
	if len(comms) != 2 || uintptr(comms[1].comm) != 205 || comms[1].Rank() != 1 {
		t.Errorf("InitAll: %d comms, second %v", len(comms), comms[1].comm)
	}
	buf := []float32{1, 2, 3, 0}
	if err := l.GroupStart(); err != nil {
		t.Fatal(err)
	}
	err = comms[0].AllReduce(uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&buf[0])), 3, Float32, Sum, 0)
	runtime.KeepAlive(buf)
	if err != nil {
		t.Fatalf("AllReduce: %v", err)
	}
	if err := l.GroupEnd(); err != nil {
		t.Fatal(err)
	}
	if buf[0] != 2 || buf[1] != 4 || buf[2] != 6 || buf[3] != 0 {
		t.Errorf("AllReduce wrote %v, want [2 4 6 0]", buf)
	}
	err = comms[0].AllReduce(uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&buf[0])), 1, Float16, Sum, 0)
	if err == nil || !strings.Contains(err.Error(), "invalid argument (ncclResult 4)") {
		t.Errorf("AllReduce of a refused type: %v, want the library's error string", err)
	}
	if err := l.GroupEnd(); err == nil || !strings.Contains(err.Error(), "ncclGroupEnd: invalid usage") {
		t.Errorf("GroupEnd without GroupStart: %v", err)
	}
	for _, c := range append(comms, c) {
		if err := c.Destroy(); err != nil {
			t.Error(err)
		}
	}
	if got := os.Getenv("NCCL_NVLS_ENABLE"); got != "0" {
		t.Errorf("NCCL_NVLS_ENABLE = %q after init, want 0", got)
	}
}

func TestCandidates(t *testing.T) {
	env := map[string]string{"VIRTUAL_ENV": "/venv", "HOME": "/home/u"}
	var patterns []string
	glob := func(p string) ([]string, error) {
		patterns = append(patterns, p)
		if strings.HasPrefix(p, "/venv/lib/python3*/site-packages/") {
			return []string{"/venv/lib/python3.12/site-packages/nvidia/nccl/lib/" + LibName}, nil
		}
		return nil, nil
	}
	got := Candidates(func(k string) string { return env[k] }, glob)
	if got[0] != LibName {
		t.Errorf("first candidate %q, want the soname", got[0])
	}
	want := "/venv/lib/python3.12/site-packages/nvidia/nccl/lib/" + LibName
	found := false
	for _, c := range got {
		found = found || c == want
	}
	if !found {
		t.Errorf("candidates %v lack PyTorch's %s", got, want)
	}
	home := false
	for _, p := range patterns {
		home = home || strings.HasPrefix(p, "/home/u/.local/lib/python3*/")
	}
	if !home {
		t.Errorf("the user's site-packages were not searched: %v", patterns)
	}
}
