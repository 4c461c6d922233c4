package nccl

import (
	"os"
	"path/filepath"
	"sort"
)

// DataType is ncclDataType_t.
type DataType int32

// The element types llmserve reduces (ncclDataType_t values).
const (
	Float16  DataType = 6
	Float32  DataType = 7
	BFloat16 DataType = 9
)

// RedOp is ncclRedOp_t.
type RedOp int32

// Sum is ncclSum.
const Sum RedOp = 0

// UniqueIDBytes is NCCL_UNIQUE_ID_BYTES.
const UniqueIDBytes = 128

// UniqueID is ncclUniqueId: what every rank of one communicator shares.
type UniqueID [UniqueIDBytes]byte

// LibName is the library's soname.
const LibName = "libnccl.so.2"

// Candidates lists where Open looks for the library when no path is
// given, in order: the loader's own search (LD_LIBRARY_PATH, ld.so.cache)
// by soname, the usual system and CUDA locations, then the copies that
// PyTorch's wheels ship under nvidia/nccl/lib of a Python environment
// (VIRTUAL_ENV, CONDA_PREFIX, the system's and the user's site-packages).
// getenv and glob are os.Getenv and filepath.Glob outside tests.
func Candidates(getenv func(string) string, glob func(string) ([]string, error)) []string {
	out := []string{LibName, "libnccl.so"}
	for _, dir := range []string{
		"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
		"/usr/local/cuda/lib64", "/usr/local/nccl/lib", "/opt/nccl/lib",
	} {
		out = append(out, filepath.Join(dir, LibName))
	}
	var roots []string
	for _, env := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if v := getenv(env); v != "" {
			roots = append(roots, v)
		}
	}
	roots = append(roots, "/usr/local", "/usr", "/opt/conda")
	if home := getenv("HOME"); home != "" {
		roots = append(roots, filepath.Join(home, ".local"))
	}
	for _, root := range roots {
		for _, pkgs := range []string{"site-packages", "dist-packages"} {
			matches, err := glob(filepath.Join(root, "lib", "python3*", pkgs, "nvidia", "nccl", "lib", LibName))
			if err != nil {
				continue
			}
			sort.Strings(matches)
			out = append(out, matches...)
		}
	}
	return out
}

// defaultCandidates is Candidates for this process.
func defaultCandidates() []string { return Candidates(os.Getenv, filepath.Glob) }
