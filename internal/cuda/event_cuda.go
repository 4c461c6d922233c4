//go:build cuda

package cuda

/*
#include <cuda.h>
*/
import "C"

import (
	"time"
	"unsafe"

	"gorgonia.org/cu"
)

// Event is a timing event on the context's stream.
type Event struct {
	ctx *Context
	ev  cu.Event
}

// NewEvent creates a timing event.
func (c *Context) NewEvent() (*Event, error) {
	release, err := c.bind()
	if err != nil {
		return nil, err
	}
	defer release()
	ev, err := cu.MakeEvent(cu.DefaultEvent)
	if err != nil {
		return nil, wrap("cuEventCreate", err)
	}
	return &Event{ctx: c, ev: ev}, nil
}

// Record marks the point the stream has reached: the event completes when
// the work queued before it has run.
func (e *Event) Record() error {
	release, err := e.ctx.bind()
	if err != nil {
		return err
	}
	defer release()
	return wrap("cuEventRecord", e.ev.Record(e.ctx.stream))
}

// RecordInCapture records the event from inside a stream capture: the
// captured graph gets an event record node, and every replay records the
// event when it reaches that point.
func (e *Event) RecordInCapture() error {
	release, err := e.ctx.bind()
	if err != nil {
		return err
	}
	defer release()
	ev := *(*C.CUevent)(unsafe.Pointer(&e.ev))
	s := C.CUstream(unsafe.Pointer(e.ctx.stream.C()))
	return check("cuEventRecordWithFlags(EXTERNAL)", C.cuEventRecordWithFlags(ev, s, C.CU_EVENT_RECORD_EXTERNAL))
}

// Since is the device time from start to e; both must have completed
// (after a Sync). The resolution is about half a microsecond.
func (e *Event) Since(start *Event) (time.Duration, error) {
	release, err := e.ctx.bind()
	if err != nil {
		return 0, err
	}
	defer release()
	ms, err := start.ev.Elapsed(e.ev)
	if err != nil {
		return 0, wrap("cuEventElapsedTime", err)
	}
	return time.Duration(ms * float64(time.Millisecond)), nil
}

// Destroy releases the event.
func (e *Event) Destroy() error {
	release, err := e.ctx.bind()
	if err != nil {
		return err
	}
	defer release()
	return wrap("cuEventDestroy", cu.DestroyEvent(&e.ev))
}
