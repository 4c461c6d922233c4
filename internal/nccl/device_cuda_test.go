//go:build cuda && cgo

package nccl

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"llmserve/internal/cuda"
)

// devices opens n CUDA devices and NCCL with one communicator per device,
// or skips when the host has fewer GPUs or no NCCL (LLMSERVE_NCCL_LIB
// gives its path).
func devices(tb testing.TB, n int) (*Lib, []*cuda.Context, []*Comm) {
	tb.Helper()
	var ctxs []*cuda.Context
	for d := range n {
		c, err := cuda.Open(d)
		if err != nil {
			tb.Skipf("all-reduce over %d GPUs: %v", n, err)
		}
		ctxs = append(ctxs, c)
	}
	tb.Cleanup(func() {
		for _, c := range ctxs {
			c.Close()
		}
	})
	lib, err := Open(os.Getenv("LLMSERVE_NCCL_LIB"))
	if err != nil {
		tb.Skipf("all-reduce: %v", err)
	}
	devs := make([]int, n)
	for i := range devs {
		devs[i] = i
	}
	comms, err := lib.InitAll(devs)
	if err != nil {
		lib.Close()
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		for _, c := range comms {
			c.Destroy()
		}
		lib.Close()
	})
	v, _ := lib.Version()
	tb.Logf("NCCL %d from %s", v, lib.Path())
	return lib, ctxs, comms
}

// allReduce sums bufs (one per rank, count floats each) in place, the
// ranks' calls grouped from this one thread, and waits for every stream.
func allReduce(lib *Lib, ctxs []*cuda.Context, comms []*Comm, bufs []*cuda.Buffer, count int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := lib.GroupStart(); err != nil {
		return err
	}
	for r, c := range comms {
		p := uintptr(bufs[r].Ptr())
		if err := ctxs[r].Do(func() error { return c.AllReduce(p, p, count, Float32, Sum, ctxs[r].StreamHandle()) }); err != nil {
			lib.GroupEnd()
			return err
		}
	}
	if err := lib.GroupEnd(); err != nil {
		return err
	}
	for _, c := range ctxs {
		if err := c.Sync(); err != nil {
			return err
		}
	}
	return nil
}

// TestDeviceAllReduce sums rank-specific values over 2 GPUs and checks
// every rank's result.
func TestDeviceAllReduce(t *testing.T) {
	const n, count = 2, 4099
	lib, ctxs, comms := devices(t, n)
	bufs := make([]*cuda.Buffer, n)
	for r := range n {
		v := make([]float32, count)
		for i := range v {
			v[i] = float32((r+1)*i%1000) / 8
		}
		b, err := cuda.Upload(ctxs[r], "all-reduce", v)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Free()
		bufs[r] = b
	}
	if err := allReduce(lib, ctxs, comms, bufs, count); err != nil {
		t.Fatal(err)
	}
	for r := range n {
		got := make([]float32, count)
		if err := cuda.Download(bufs[r], got); err != nil {
			t.Fatal(err)
		}
		for i, g := range got {
			if want := float32(i%1000)/8 + float32(2*i%1000)/8; g != want {
				t.Fatalf("rank %d value %d: %g, want %g", r, i, g, want)
			}
		}
	}
}

// BenchmarkAllReduce times NCCL's in-place f32 all-reduce over 2 GPUs by
// message size (the decode step's messages are Embd·4 bytes per token:
// 16 KiB for an 8B model at batch 1, 32 KiB for 70B).
func BenchmarkAllReduce(b *testing.B) {
	const n = 2
	lib, ctxs, comms := devices(b, n)
	for _, size := range []int{4 << 10, 16 << 10, 32 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			count := size / 4
			bufs := make([]*cuda.Buffer, n)
			for r := range n {
				buf, err := ctxs[r].Alloc("all-reduce", int64(size))
				if err != nil {
					b.Fatal(err)
				}
				defer buf.Free()
				bufs[r] = buf
			}
			if err := allReduce(lib, ctxs, comms, bufs, count); err != nil { // warm-up
				b.Fatal(err)
			}
			runs, start := 0, time.Now()
			for b.Loop() {
				if err := allReduce(lib, ctxs, comms, bufs, count); err != nil {
					b.Fatal(err)
				}
				runs++
			}
			per := time.Since(start).Seconds() / float64(runs)
			b.ReportMetric(per*1e6, "µs/allreduce")
			b.ReportMetric(float64(size)/per/1e9, "GB/s")
		})
	}
}
