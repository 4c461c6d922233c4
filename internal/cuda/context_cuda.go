//go:build cuda

package cuda

import (
	"fmt"
	"runtime"

	"gorgonia.org/cu"
)

// Context is one device's primary context and the stream every operation
// of llmserve is ordered on. A CUDA context is current per OS thread, so
// each method binds it to the calling goroutine's thread for its duration;
// a Context may be used from any goroutine, but not from two at once.
type Context struct {
	dev    cu.Device
	ctx    cu.CUContext
	stream cu.Stream // non-blocking stream all work is queued on
	name   string    // device name, for messages
	sms    int       // multiprocessor count
	major  int       // compute capability (major)
	minor  int       // compute capability (minor)
	driver int       // driver's CUDA version, e.g. 13000

	// overlap lets kernels marked by SetWaits start before the previous
	// kernel has finished (programmatic dependent launch).
	overlap bool
}

// Open retains the primary context of device ordinal and creates a stream.
func Open(ordinal int) (*Context, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := initError(); err != nil {
		return nil, err
	}
	n, err := cu.NumDevices()
	if err != nil {
		return nil, wrap("cuDeviceGetCount", err)
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("cuda: device %d: only %d devices", ordinal, n)
	}
	c := &Context{dev: cu.Device(ordinal)}
	if c.ctx, err = c.dev.RetainPrimaryCtx(); err != nil {
		return nil, wrap("cuDevicePrimaryCtxRetain", err)
	}
	if err := wrap("cuCtxSetCurrent", cu.SetCurrentContext(c.ctx)); err != nil {
		c.dev.ReleasePrimaryCtx()
		return nil, err
	}
	if c.stream, err = cu.MakeStream(cu.NonBlocking); err != nil {
		c.dev.ReleasePrimaryCtx()
		return nil, wrap("cuStreamCreate", err)
	}
	if c.name, err = c.dev.Name(); err != nil {
		c.name = fmt.Sprintf("device %d", ordinal)
	}
	if c.sms, err = c.dev.Attribute(cu.MultiprocessorCount); err != nil {
		c.Close()
		return nil, wrap("cuDeviceGetAttribute", err)
	}
	if c.major, err = c.dev.Attribute(cu.ComputeCapabilityMajor); err != nil {
		c.Close()
		return nil, wrap("cuDeviceGetAttribute", err)
	}
	if c.minor, err = c.dev.Attribute(cu.ComputeCapabilityMinor); err != nil {
		c.Close()
		return nil, wrap("cuDeviceGetAttribute", err)
	}
	c.driver = cu.Version() // -1 when the driver does not say

	return c, nil
}

// bind makes the context current on the calling goroutine's OS thread and
// keeps the goroutine there until the returned function is called.
func (c *Context) bind() (func(), error) {
	runtime.LockOSThread()
	if err := wrap("cuCtxSetCurrent", cu.SetCurrentContext(c.ctx)); err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	return runtime.UnlockOSThread, nil
}

// Do runs fn with the context bound to the calling thread, so that a series
// of operations pays for binding once.
func (c *Context) Do(fn func() error) error {
	release, err := c.bind()
	if err != nil {
		return err
	}
	defer release()
	return fn()
}

// Name is the device's name.
func (c *Context) Name() string { return c.name }

// overlapDriver is the first driver version that records launches allowed
// to overlap into a captured graph (as programmatic edges).
const overlapDriver = 12030

// SetOverlap allows or forbids kernels marked by SetWaits to start before
// the kernel ahead of them has finished (programmatic dependent launch). It
// needs compute capability 9.0 and a driver of CUDA 12.3 or newer; on
// others it stays off. It reports whether overlap is now on.
func (c *Context) SetOverlap(on bool) bool {
	c.overlap = on && c.major >= 9 && c.driver >= overlapDriver
	return c.overlap
}

// Capability is the device's compute capability, major and minor.
func (c *Context) Capability() (major, minor int) { return c.major, c.minor }

// Multiprocessors is the device's multiprocessor count.
func (c *Context) Multiprocessors() int { return c.sms }

// Sync waits for all work queued on the context's stream and reports the
// first asynchronous error.
func (c *Context) Sync() error {
	release, err := c.bind()
	if err != nil {
		return err
	}
	defer release()
	return wrap("cuStreamSynchronize", c.stream.Synchronize())
}

// Close destroys the stream and releases the primary context.
func (c *Context) Close() error {
	release, err := c.bind()
	if err != nil {
		return err
	}
	defer release()
	err = wrap("cuStreamSynchronize", c.stream.Synchronize())
	if e := wrap("cuStreamDestroy", c.stream.Destroy()); err == nil {
		err = e
	}
	if e := wrap("cuDevicePrimaryCtxRelease", c.dev.ReleasePrimaryCtx()); err == nil {
		err = e
	}
	return err
}

// MemInfo returns the device memory free and in all, in bytes.
func (c *Context) MemInfo() (free, total int64, err error) {
	release, err := c.bind()
	if err != nil {
		return 0, 0, err
	}
	defer release()
	free, total, err = cu.MemInfo()
	return free, total, wrap("cuMemGetInfo", err)
}
