//go:build cuda

package main

import (
	"fmt"

	"llmserve/decode"
	"llmserve/model"
)

// openGPUEngine opens the CUDA engine on device 0.
func openGPUEngine(m *model.Model, c engineConfig, warn func(string)) (decode.Engine, error) {
	o := decode.GPUOptions{
		Context: c.Context, MaxSeqs: c.MaxSeqs, Graphs: c.CUDAGraphs, NoOverlap: c.NoOverlap,
		GraphDump: c.GraphDump, GraphCheck: c.GraphCheck, Warn: warn, Info: c.Info, Progress: c.Progress,
		Deterministic: c.Deterministic, Buckets: c.GraphBuckets,
	}
	if c.TP.Ranks > 1 {
		e, err := decode.NewTPGPUEngine(m, decode.TPGPUOptions{GPUOptions: o, Ranks: c.TP.Ranks, NCCLLib: c.TP.NCCLLib})
		if err != nil {
			return nil, err
		}
		warn(fmt.Sprintf("-tp %d: the tensor-parallel engine is experimental: eager steps of at most 64 tokens, logits gathered on the host", c.TP.Ranks))
		return e, nil
	}
	if c.CacheTypeK == decode.KVF16 && c.CacheTypeV == decode.KVF16 {
		// -ctk f16 -ctv f16: the paged f16 pool, sized by --kv-block-size
		// and --kv-memory as on the CPU.
		o.Paged, o.BlockSize, o.KVMemory = true, c.KVBlock, c.KVMemory
		return decode.NewPagedGPUEngine(m, o)
	}
	return decode.NewGPUEngine(m, o)
}
