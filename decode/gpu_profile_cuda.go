//go:build cuda

package decode

import (
	"fmt"
)

var _ StepProfiler = (*GPUEngine)(nil)

// ProfileStep runs b (at most 512 tokens, at most 64 of them wanting
// logits) as one step, captured in a graph
// with a timing event after every kernel, and returns every kernel's
// device time in launch order, as a graph replay runs them (one event node
// between kernels adds about a microsecond to each). The step is real: it
// writes b's tokens into the KV cache as Forward does. Like Forward, it
// must not run concurrently with another step.
func (e *GPUEngine) ProfileStep(b *Batch) ([]KernelTime, error) {
	// Check b as Forward does, without asking for logits.
	probe := Batch{Tokens: b.Tokens, Pos: b.Pos, Seq: b.Seq, Logits: make([]bool, len(b.Logits))}
	if err := probe.check(e.m.Vocab, e.opts.Context, e.opts.MaxSeqs, nil); err != nil {
		return nil, err
	}
	if n := b.Len(); n < 1 || n > e.stepRows || b.wanted() > gpuMaxBatch {
		return nil, fmt.Errorf("decode: profile: a step holds 1 to %d tokens, at most %d of them wanting logits, not %d (%d)", e.stepRows, gpuMaxBatch, n, b.wanted())
	}
	var ts []KernelTime
	err := e.dev.Context().Do(func() error {
		// Rows whose logits are wanted are picked greedily, as bench does.
		picks := make([]*Pick, b.wanted())
		for i := range picks {
			picks[i] = &Pick{}
		}
		B, err := e.writeInputs(b, picks, 0)
		if err != nil {
			return err
		}
		// The step is captured with an event after every kernel and
		// replayed twice (the first replay loads the kernels' code); the
		// events of the second give each kernel's device time as a graph
		// replay runs it, with no host in between.
		e.dev.StartProfile(true)
		g, cerr := e.capture(func() error {
			if gathered(B, b.wanted()) {
				return e.wideStep(B, b.wanted())
			}
			return e.step(B)
		})
		e.dev.EndProfile()
		if cerr != nil {
			return cerr
		}
		defer g.Destroy()
		for range 2 {
			if err := g.Launch(); err != nil {
				return err
			}
		}
		launches, err := e.dev.StopProfile()
		if err != nil {
			return err
		}
		var total float64
		for _, l := range launches {
			total += l.Micros
		}
		ts = make([]KernelTime, len(launches))
		for i, l := range launches {
			ts[i] = KernelTime{Kernel: l.Kernel, Layer: l.Layer, Op: l.Op, Micros: l.Micros}
			if total > 0 {
				ts[i].Share = l.Micros / total
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("decode: cuda: profile: %w", err)
	}
	return ts, nil
}
