//go:build cuda

package decode

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"llmserve/internal/cuda"
	"llmserve/internal/nccl"
	"llmserve/internal/nmse"
)

// needGPUs skips the test unless this host has n GPUs and NCCL loads.
func needGPUs(t *testing.T, n int) {
	t.Helper()
	c, err := cuda.Open(n - 1)
	if err != nil {
		t.Skipf("tensor parallelism over %d GPUs: %v", n, err)
	}
	c.Close()
	lib, err := nccl.Open(os.Getenv("LLMSERVE_NCCL_LIB"))
	if err != nil {
		t.Skipf("tensor parallelism: %v (LLMSERVE_NCCL_LIB gives its path)", err)
	}
	lib.Close()
}

func openTPGPU(t *testing.T, rel string, ranks int, opts GPUOptions) *TPGPUEngine {
	t.Helper()
	opts.Preview = true // the tensor-parallel engine runs with the preview kernels only
	e, err := NewTPGPUEngine(loadModel(t, rel), TPGPUOptions{GPUOptions: opts, Ranks: ranks, NCCLLib: os.Getenv("LLMSERVE_NCCL_LIB")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	return e
}

// TestTPGPUGoldenLogits runs the golden models that split (all but the
// K-quants, whose 256-value blocks the 128-column shards cut) over 2 GPUs
// and compares the logits with the single CPU engine's.
func TestTPGPUGoldenLogits(t *testing.T) {
	needGPUs(t, 2)
	forEachGolden(t, func(t *testing.T, dir, name string) {
		if strings.Contains(name, "_K") {
			t.Skip("K-quant blocks do not split at 128 columns")
		}
		m := loadModel(t, "golden/"+name+".gguf")
		want := cpuLogits(t, m, goldenTokens)
		got := forwardAll(t, openTPGPU(t, "golden/"+name+".gguf", 2, GPUOptions{Context: 64}), goldenTokens, 0)
		err2, tol := nmse.Of(got, want), gpuCPUTolerance(name)
		t.Logf("NMSE vs CPU engine %.3g (tolerance %.0e)", err2, tol)
		if !(err2 <= tol) {
			t.Errorf("NMSE vs CPU engine %.3g exceeds %.0e", err2, tol)
		}
	})
}

// TestTPGPUStoriesGreedy generates 255 greedy tokens from BOS on
// stories260K over 2 GPUs and compares them with llama.cpp's.
func TestTPGPUStoriesGreedy(t *testing.T) {
	needGPUs(t, 2)
	want := storiesGreedyIDs(t)
	for _, ranks := range []int{2, 4} {
		t.Run(fmt.Sprintf("tp%d", ranks), func(t *testing.T) {
			needGPUs(t, ranks)
			got := greedy(t, openTPGPU(t, "models/stories260K.gguf", ranks, GPUOptions{Context: 512}), []int32{1}, len(want))
			if !slices.Equal(got, want) {
				i := 0
				for i < len(got) && got[i] == want[i] {
					i++
				}
				t.Fatalf("token %d differs: got %v..., want %v...", i, got[:min(i+1, len(got))], want[:min(i+1, len(want))])
			}
		})
	}
}
