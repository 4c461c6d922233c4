//go:build cuda

package kernels

import (
	"errors"
	"fmt"

	"llmserve/internal/cuda"
)

// LaunchTime is the device time of one kernel launch in a profile.
type LaunchTime struct {
	Kernel string
	Layer  int    // the caller's label (a transformer block, -1 for none) when the kernel was launched
	Op     string // the caller's label for the operation
	Micros float64
}

// profile records an event before the first launch and after every launch
// while a profile is being taken.
type profile struct {
	events   []*cuda.Event // [len(launches)+1]: the start, then the end of each launch; reused across profiles
	launches []LaunchTime  // in launch order, Micros filled by StopProfile
	captured bool          // the launches are being captured into a graph
}

// Label names the operation the following launches belong to, for
// profiles; it costs nothing when no profile is being taken.
func (d *Device) Label(layer int, op string) { d.layer, d.op = layer, op }

// StartProfile makes every following launch record a timing event after
// it (and the first one before it), until StopProfile. With captured set,
// the launches are being captured into a graph: the events become event
// record nodes, and replaying the graph times every kernel with no host
// in between. Without it, the time of a launch includes any wait of the
// device for the host to queue the kernel, so kernels shorter than the
// host's launch overhead read high.
func (d *Device) StartProfile(captured bool) {
	if d.prof == nil {
		d.prof = &profile{}
	}
	d.prof.launches = d.prof.launches[:0]
	d.prof.captured = captured
	d.profiling = true
}

// EndProfile stops recording events, for a profile whose graph is then
// replayed before StopProfile reads the times.
func (d *Device) EndProfile() { d.profiling = false }

// StopProfile waits for the profiled work (the eager launches, or the
// replay of their graph) and returns each launch's device time, in launch
// order.
func (d *Device) StopProfile() ([]LaunchTime, error) {
	if d.prof == nil {
		return nil, errors.New("kernels: profile: not started")
	}
	d.profiling = false
	if err := d.Sync(); err != nil {
		return nil, fmt.Errorf("kernels: profile: %w", err)
	}
	out := make([]LaunchTime, len(d.prof.launches))
	for i, l := range d.prof.launches {
		dt, err := d.prof.events[i+1].Since(d.prof.events[i])
		if err != nil {
			return nil, fmt.Errorf("kernels: profile: launch %d (%s): %w", i, l.Kernel, err)
		}
		l.Micros = float64(dt.Nanoseconds()) / 1e3
		out[i] = l
	}
	return out, nil
}

// closeProfile releases the profile's events.
func (d *Device) closeProfile() error {
	if d.prof == nil {
		return nil
	}
	var errs []error
	for _, ev := range d.prof.events {
		errs = append(errs, ev.Destroy())
	}
	d.prof = nil
	return errors.Join(errs...)
}

// profiledLaunch launches k and records an event after it (and one before
// it when it is the first).
func (d *Device) profiledLaunch(k *cuda.Kernel, grid, block cuda.Dim3, shared int, args ...cuda.Arg) error {
	p := d.prof
	i := len(p.launches)
	for len(p.events) < i+2 {
		ev, err := d.ctx.NewEvent()
		if err != nil {
			return fmt.Errorf("kernels: profile %s: %w", k.Name(), err)
		}
		p.events = append(p.events, ev)
	}
	record := func(ev *cuda.Event) error {
		if p.captured {
			return ev.RecordInCapture()
		}
		return ev.Record()
	}
	if i == 0 {
		if err := record(p.events[0]); err != nil {
			return fmt.Errorf("kernels: profile %s: %w", k.Name(), err)
		}
	}
	if err := k.Launch(grid, block, shared, args...); err != nil {
		return err
	}
	if err := record(p.events[i+1]); err != nil {
		return fmt.Errorf("kernels: profile %s: %w", k.Name(), err)
	}
	p.launches = append(p.launches, LaunchTime{Kernel: k.Name(), Layer: d.layer, Op: d.op})
	return nil
}
