//go:build cuda

package main

import (
	"errors"
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
	f16 := func(t decode.KVType) bool { return t == decode.KVF16 || t == decode.KVDefault }
	if f16(c.CacheTypeK) && f16(c.CacheTypeV) {
		// f16 cells (the default): the paged f16 pool, sized by
		// --kv-block-size and --kv-memory (bytes, or a share of the memory
		// the weights leave) as on the CPU; -ctk f32 -ctv f32 keep one f32
		// region per slot.
		p := o
		p.Paged, p.BlockSize, p.KVMemory, p.KVShare = true, c.KVBlock, c.KVMemory, c.KVShare
		e, err := decode.NewPagedGPUEngine(m, p)
		switch {
		case err == nil:
			return e, nil
		case !errors.Is(err, model.ErrUnsupported):
			return nil, err
		}
		// A model the pool does not take yet (the executor's
		// architectures without the preview) keeps the GPU with its f32
		// cache (openEngine warns where the f16 cells or a pool budget
		// were asked for; the reason goes to the log either way).
		if c.Info != nil {
			c.Info(fmt.Sprintf("one f32 KV region per slot: %v", err))
		}
	}
	return decode.NewGPUEngine(m, o)
}
