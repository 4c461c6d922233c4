//go:build cuda

package main

import (
	"llmserve/decode"
	"llmserve/model"
)

// openGPUEngine opens the CUDA engine on device 0.
func openGPUEngine(m *model.Model, c engineConfig, warn func(string)) (decode.Engine, error) {
	return decode.NewGPUEngine(m, decode.GPUOptions{
		Context: c.Context, MaxSeqs: c.MaxSeqs, Graphs: c.CUDAGraphs, NoOverlap: c.NoOverlap,
		GraphDump: c.GraphDump, GraphCheck: c.GraphCheck, Warn: warn, Info: c.Info, Progress: c.Progress,
		Deterministic: c.Deterministic, Buckets: c.GraphBuckets,
	})
}
