package decode

import (
	"slices"
	"testing"
	"time"
)

// TestHistogramObserve checks which bucket each value lands in: a value
// equal to a bound counts in that bound's bucket (Prometheus' le).
func TestHistogramObserve(t *testing.T) {
	for _, tt := range []struct {
		v    float64
		want int // bucket index; len(bounds) is +Inf
	}{{0, 0}, {0.5, 0}, {1, 0}, {1.5, 1}, {2, 1}, {4, 2}, {5, 3}, {1e9, 3}} {
		h := newHistogram(1, 2, 4)
		h.observe(tt.v)
		want := make([]uint64, 4)
		want[tt.want] = 1
		if !slices.Equal(h.Counts, want) || h.Count != 1 || h.Sum != tt.v {
			t.Errorf("observe(%v): counts %v, count %d, sum %v; want %v, 1, %v", tt.v, h.Counts, h.Count, h.Sum, want, tt.v)
		}
	}
}

// TestSnapshotIsACopy checks that later counting leaves a snapshot as it
// was, and that changing a snapshot leaves the counters alone.
func TestSnapshotIsACopy(t *testing.T) {
	m := NewMetrics()
	m.token(true, time.Millisecond)
	m.token(false, time.Millisecond)
	m.finish("stop")
	s := m.Snapshot()
	m.token(true, time.Second)
	m.token(false, time.Second)
	m.finish("stop")
	if s.TTFT.Count != 1 || s.ITL.Count != 1 || sum(s.TTFT.Counts) != 1 || s.Finished["stop"] != 1 {
		t.Errorf("snapshot changed by later counting: %+v", s)
	}
	s.TTFT.Counts[0], s.TTFT.Bounds[0], s.Finished["stop"] = 99, 99, 99
	n := m.Snapshot()
	if n.TTFT.Count != 2 || sum(n.TTFT.Counts) != 2 || n.TTFT.Bounds[0] == 99 || n.Finished["stop"] != 2 {
		t.Errorf("counters changed through a snapshot: %+v", n)
	}
}
