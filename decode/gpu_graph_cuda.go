//go:build cuda

package decode

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"llmserve/internal/cuda"
)

// gpuGraphStats are the counters behind GraphStats.
type gpuGraphStats struct {
	captures, replays, paramUpdates, fallbacks, eagerSteps atomic.Uint64
	sizes                                                  [MaxBucket + 1]gpuBucketStats // by step size; GraphStats reports the engine's buckets
}

// gpuBucketStats are the counters behind one BucketStats.
type gpuBucketStats struct {
	nodes, capture, instantiate                   atomic.Int64  // node count, and nanoseconds, set at the capture
	replays, eagerSteps, realTokens, paddedTokens atomic.Uint64 // steps replayed and run eagerly; tokens of requests and of padding
}

// of is the counters of steps of B tokens, nil above MaxBucket.
func (s *gpuGraphStats) of(B int) *gpuBucketStats {
	if B < 1 || B >= len(s.sizes) {
		return nil
	}
	return &s.sizes[B]
}

// padded counts a step of n tokens padded to B.
func (s *gpuGraphStats) padded(B, n int) {
	if b := s.of(B); b != nil {
		b.realTokens.Add(uint64(n))
		b.paddedTokens.Add(uint64(B - n))
	}
}

// GraphStats reports how the engine ran its steps so far. The engine
// replays its graphs without node updates (step inputs live in a device
// buffer), so ParamUpdates stays 0.
func (e *GPUEngine) GraphStats() GraphStats {
	s := &e.stats
	buckets := make([]BucketStats, len(e.buckets))
	for i, B := range e.buckets {
		b := s.of(B)
		buckets[i] = BucketStats{Size: B, Nodes: int(b.nodes.Load()),
			Capture: time.Duration(b.capture.Load()), Instantiate: time.Duration(b.instantiate.Load()),
			Replays: b.replays.Load(), EagerSteps: b.eagerSteps.Load(), RealTokens: b.realTokens.Load(), PaddedTokens: b.paddedTokens.Load()}
	}
	return GraphStats{Buckets: buckets, GraphCounts: GraphCounts{
		Captures:     s.captures.Load(),
		Replays:      s.replays.Load(),
		ParamUpdates: s.paramUpdates.Load(),
		Fallbacks:    s.fallbacks.Load(),
		EagerSteps:   s.eagerSteps.Load(),
	}}
}

var _ GraphStatser = (*GPUEngine)(nil)

// graphStep runs a step of B tokens from the bucket's graph, capturing it
// on first use; a bucket whose capture failed launches eagerly.
func (e *GPUEngine) graphStep(B int) error {
	g := e.graph(B)
	if g == nil {
		return e.eagerStep(B)
	}
	if err := g.Launch(); err != nil {
		return fmt.Errorf("replay graph of bucket %d: %w", B, err)
	}
	e.stats.replays.Add(1)
	if s := e.stats.of(B); s != nil {
		s.replays.Add(1)
	}
	return nil
}

// graph returns the bucket's graph, capturing it on first use, or nil when
// its capture or instantiation failed (once, with a warning).
func (e *GPUEngine) graph(B int) *cuda.Graph {
	if g, ok := e.graphs[B]; ok {
		return g
	}
	g, err := e.capture(func() error { return e.step(B) })
	if err != nil {
		e.graphs[B] = nil
		e.stats.fallbacks.Add(1)
		e.warn(fmt.Sprintf("cuda graph of batch bucket %d failed, that bucket launches its kernels one by one: %v", B, err))
		return nil
	}
	e.graphs[B] = g
	e.stats.captures.Add(1)
	nodes, err := g.Nodes()
	if err != nil {
		e.warn(fmt.Sprintf("cuda graph of batch bucket %d: %v", B, err))
	}
	if s := e.stats.of(B); s != nil {
		s.nodes.Store(int64(nodes))
		s.capture.Store(int64(g.CaptureTime()))
		s.instantiate.Store(int64(g.InstantiateTime()))
	}
	if e.opts.Info != nil {
		e.opts.Info(fmt.Sprintf("cuda graph of batch bucket %d: %d nodes, captured in %.2f ms, instantiated in %.2f ms",
			B, nodes, ms(g.CaptureTime().Seconds()), ms(g.InstantiateTime().Seconds())))
	}
	if e.opts.GraphDump != "" {
		if err := e.dump(B, g); err != nil {
			e.warn(fmt.Sprintf("cuda graph of batch bucket %d: %v", B, err))
		}
	}
	return g
}

// capture records the launches fn queues into a graph (cuda's Capture)
// with e.capturing set meanwhile, so that the step queues nothing that
// reads back (moeGroupedStep).
func (e *GPUEngine) capture(fn func() error) (*cuda.Graph, error) {
	e.capturing = true
	defer func() { e.capturing = false }()
	return e.dev.Context().Capture(fn)
}

func ms(seconds float64) float64 { return seconds * 1e3 }

// dump writes the bucket's graph to GraphDump/step-b<B>.dot.
func (e *GPUEngine) dump(B int, g *cuda.Graph) error {
	if err := os.MkdirAll(e.opts.GraphDump, 0o755); err != nil {
		return fmt.Errorf("graph dump: %w", err)
	}
	return g.WriteDot(filepath.Join(e.opts.GraphDump, fmt.Sprintf("step-b%02d.dot", B)))
}

func (e *GPUEngine) warn(msg string) {
	if e.opts.Warn != nil {
		e.opts.Warn(msg)
	}
}

// checkStep runs a step of B tokens (n of them real) eagerly, then from
// its graph, and fails when the logits of the real tokens differ in any
// bit. Running a step twice is safe: the second run writes the same
// values to the same cache cells and reads the same cache.
func (e *GPUEngine) checkStep(B, n int) error {
	V := e.m.Vocab
	ctx := e.dev.Context()
	if err := e.eagerStep(B); err != nil {
		return err
	}
	eager := e.check[:n*V]
	if err := ctx.ReadAt(e.s.logits.Ptr, cuda.AsBytes(eager)); err != nil {
		return err
	}
	if err := e.graphStep(B); err != nil {
		return err
	}
	graph := e.logits[:n*V]
	if err := ctx.ReadAt(e.s.logits.Ptr, cuda.AsBytes(graph)); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		diff, first := 0, -1
		for j := i * V; j < (i+1)*V; j++ {
			if math.Float32bits(graph[j]) != math.Float32bits(eager[j]) {
				if first < 0 {
					first = j
				}
				diff++
			}
		}
		if diff > 0 {
			return fmt.Errorf("graph check: batch bucket %d: token %d: %d of %d logits differ between graph replay and eager launches (first: logit %d, graph %g, eager %g)",
				B, i, diff, V, first-i*V, graph[first], eager[first])
		}
	}
	return nil
}
