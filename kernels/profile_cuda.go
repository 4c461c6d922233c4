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

// profile records a pair of events around every launch while a profile
// is being taken.
type profile struct {
	events   []*cuda.Event // [2*len(launches)] start and end of each launch; reused across profiles
	launches []LaunchTime  // in launch order, Micros filled by StopProfile
}

// Label names the operation the following launches belong to, for
// profiles; it costs nothing when no profile is being taken.
func (d *Device) Label(layer int, op string) { d.layer, d.op = layer, op }

// StartProfile makes every following launch record a pair of timing events
// on the stream, until StopProfile. Launches are timed one by one, so a
// profile is meant for eager launches, not for graph capture.
func (d *Device) StartProfile() {
	if d.prof == nil {
		d.prof = &profile{}
	}
	d.prof.launches = d.prof.launches[:0]
	d.profiling = true
}

// StopProfile waits for the profiled work and returns each launch's device
// time, in launch order. The time between a launch's events includes any
// wait of the device for the host to queue the kernel, so kernels shorter
// than the host's launch overhead read high.
func (d *Device) StopProfile() ([]LaunchTime, error) {
	if !d.profiling {
		return nil, errors.New("kernels: profile: not started")
	}
	d.profiling = false
	if err := d.Sync(); err != nil {
		return nil, fmt.Errorf("kernels: profile: %w", err)
	}
	out := make([]LaunchTime, len(d.prof.launches))
	for i, l := range d.prof.launches {
		dt, err := d.prof.events[2*i+1].Since(d.prof.events[2*i])
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

// profiledLaunch launches k between two recorded events.
func (d *Device) profiledLaunch(k *cuda.Kernel, grid, block cuda.Dim3, shared int, args ...cuda.Arg) error {
	p := d.prof
	i := len(p.launches)
	for len(p.events) < 2*(i+1) {
		ev, err := d.ctx.NewEvent()
		if err != nil {
			return fmt.Errorf("kernels: profile %s: %w", k.Name(), err)
		}
		p.events = append(p.events, ev)
	}
	if err := p.events[2*i].Record(); err != nil {
		return fmt.Errorf("kernels: profile %s: %w", k.Name(), err)
	}
	if err := k.Launch(grid, block, shared, args...); err != nil {
		return err
	}
	if err := p.events[2*i+1].Record(); err != nil {
		return fmt.Errorf("kernels: profile %s: %w", k.Name(), err)
	}
	p.launches = append(p.launches, LaunchTime{Kernel: k.Name(), Layer: d.layer, Op: d.op})
	return nil
}
