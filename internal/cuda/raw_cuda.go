//go:build cuda

package cuda

import (
	"unsafe"

	"gorgonia.org/cu"
)

// ReadAt copies len(dst) bytes from device address p into dst,
// waiting for all earlier work on the stream. It serves views (slices of a
// buffer) where the Buffer itself is not at hand.
func (c *Context) ReadAt(p DevPtr, dst []byte) error {
	if len(dst) == 0 {
		return nil
	}
	release, err := c.bind()
	if err != nil {
		return err
	}
	defer release()
	if err := wrap("cuMemcpyDtoHAsync", cu.MemcpyDtoHAsync(unsafe.Pointer(&dst[0]), cu.DevicePtr(p), int64(len(dst)), c.stream)); err != nil {
		return err
	}
	return wrap("cuStreamSynchronize", c.stream.Synchronize())
}

// WriteAt copies src to device address p, ordered on the stream.
func (c *Context) WriteAt(p DevPtr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	release, err := c.bind()
	if err != nil {
		return err
	}
	defer release()
	return wrap("cuMemcpyHtoDAsync", cu.MemcpyHtoDAsync(cu.DevicePtr(p), unsafe.Pointer(&src[0]), int64(len(src)), c.stream))
}
