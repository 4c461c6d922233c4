package decode

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// GraphStats counts how an engine that replays CUDA graphs ran its steps.
// A step is one chunk of a batch (at most 64 tokens, or a prompt chunk
// that runs eagerly at its own size).
type GraphStats struct {
	GraphCounts
	Buckets []BucketStats // one per graph bucket, by ascending size
}

// GraphCounts are the totals of GraphStats over every step size.
type GraphCounts struct {
	Captures     uint64 // graphs captured and instantiated
	Replays      uint64 // steps run by replaying a graph
	ParamUpdates uint64 // kernel-node parameter updates before a replay
	Fallbacks    uint64 // captures or instantiations that failed, leaving their bucket to eager launches
	EagerSteps   uint64 // steps run by launching kernels one by one
}

// BucketStats are the figures of one graph bucket: its graph, and the
// steps padded to its size.
type BucketStats struct {
	Size         int           // tokens of the bucket's steps
	Nodes        int           // nodes of its graph; 0 before the capture or when it failed
	Capture      time.Duration // time its capture took
	Instantiate  time.Duration // time its instantiation took
	Replays      uint64        // steps run by replaying its graph
	EagerSteps   uint64        // steps of its size run by launching kernels one by one
	RealTokens   uint64        // tokens of requests in steps of its size
	PaddedTokens uint64        // padding tokens that filled those steps to its size
}

// GraphStatser is an engine that reports GraphStats (safe to call from any
// goroutine while the engine runs).
type GraphStatser interface {
	GraphStats() GraphStats
}

// KernelTime is the device time of one kernel launch of a profiled step.
type KernelTime struct {
	Kernel string  // the kernel's name, e.g. matvec_Q4_K_1
	Layer  int     // transformer block, -1 outside the blocks
	Op     string  // the operation, named as llama.cpp names its tensors (attn_q, ffn_down, ...)
	Micros float64 // device time between events recorded before and after the launch
	Share  float64 // Micros over the step's total
}

// StepProfiler is an engine that can time every kernel launch of one step.
// The step is a real one: it writes the KV cache like Forward.
type StepProfiler interface {
	ProfileStep(b *Batch) ([]KernelTime, error)
}

// WriteKernelTable prints ts as a table (kernel, layer, op, µs, share) in
// launch order, then the total and the kernels by total time.
func WriteKernelTable(w io.Writer, ts []KernelTime) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "kernel\tlayer\top\tµs\tshare\t")
	var total float64
	byKernel := map[string]float64{}
	var order []string
	for _, t := range ts {
		layer := "-"
		if t.Layer >= 0 {
			layer = fmt.Sprint(t.Layer)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.1f\t%.1f%%\t\n", t.Kernel, layer, t.Op, t.Micros, 100*t.Share)
		total += t.Micros
		key := t.Kernel + "\t" + t.Op
		if _, ok := byKernel[key]; !ok {
			order = append(order, key)
		}
		byKernel[key] += t.Micros
	}
	fmt.Fprintf(tw, "total\t\t%d launches\t%.1f\t100%%\t\n", len(ts), total)
	fmt.Fprintln(tw, "\t\t\t\t\t")
	fmt.Fprintln(tw, "kernel\tall layers\top\tµs\tshare\t")
	for _, k := range order {
		share := 0.0
		if total > 0 {
			share = byKernel[k] / total
		}
		kernel, op, _ := strings.Cut(k, "\t")
		fmt.Fprintf(tw, "%s\t\t%s\t%.1f\t%.1f%%\t\n", kernel, op, byKernel[k], 100*share)
	}
	return tw.Flush()
}
