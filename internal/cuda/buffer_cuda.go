//go:build cuda

package cuda

import (
	"fmt"
	"unsafe"

	"gorgonia.org/cu"
)

// DevPtr is a device address, as kernels receive it.
type DevPtr uint64

// Add is p advanced by n bytes.
func (p DevPtr) Add(n int64) DevPtr { return p + DevPtr(n) }

// Buffer is one device allocation of Size bytes.
type Buffer struct {
	ctx  *Context
	ptr  cu.DevicePtr
	size int64
	name string // what the buffer holds, for messages
}

// Alloc allocates size bytes of device memory; name says what they hold.
func (c *Context) Alloc(name string, size int64) (*Buffer, error) {
	if size <= 0 {
		return nil, fmt.Errorf("cuda: alloc %s: size %d", name, size)
	}
	release, err := c.bind()
	if err != nil {
		return nil, err
	}
	defer release()
	p, err := cu.MemAlloc(size)
	if err != nil {
		return nil, wrap(fmt.Sprintf("cuMemAlloc %s (%d bytes)", name, size), err)
	}
	return &Buffer{ctx: c, ptr: p, size: size, name: name}, nil
}

// Ptr is the buffer's device address.
func (b *Buffer) Ptr() DevPtr { return DevPtr(b.ptr) }

// Size is the buffer's length in bytes.
func (b *Buffer) Size() int64 { return b.size }

// Free releases the buffer; it is a no-op on nil or freed buffers.
func (b *Buffer) Free() error {
	if b == nil || b.ptr == 0 {
		return nil
	}
	release, err := b.ctx.bind()
	if err != nil {
		return err
	}
	defer release()
	err = wrap("cuMemFree "+b.name, cu.MemFree(b.ptr))
	b.ptr = 0
	return err
}

func (b *Buffer) span(op string, off, n int64) error {
	if b == nil || b.ptr == 0 {
		return fmt.Errorf("cuda: %s: buffer freed or nil", op)
	}
	if off < 0 || n < 0 || off+n > b.size {
		return fmt.Errorf("cuda: %s %s: bytes [%d,%d) outside buffer of %d", op, b.name, off, off+n, b.size)
	}
	return nil
}

// Write copies src to the buffer at byte offset off, ordered on the stream.
func (b *Buffer) Write(off int64, src []byte) error {
	if err := b.span("write", off, int64(len(src))); err != nil || len(src) == 0 {
		return err
	}
	release, err := b.ctx.bind()
	if err != nil {
		return err
	}
	defer release()
	// A pageable source is staged before the call returns, so src may be
	// reused at once.
	return wrap("cuMemcpyHtoDAsync "+b.name, cu.MemcpyHtoDAsync(b.ptr+cu.DevicePtr(off), unsafe.Pointer(&src[0]), int64(len(src)), b.ctx.stream))
}

// Read copies len(dst) bytes from byte offset off into dst, waiting for all
// earlier work on the stream.
func (b *Buffer) Read(off int64, dst []byte) error {
	if err := b.span("read", off, int64(len(dst))); err != nil || len(dst) == 0 {
		return err
	}
	release, err := b.ctx.bind()
	if err != nil {
		return err
	}
	defer release()
	if err := wrap("cuMemcpyDtoHAsync "+b.name, cu.MemcpyDtoHAsync(unsafe.Pointer(&dst[0]), b.ptr+cu.DevicePtr(off), int64(len(dst)), b.ctx.stream)); err != nil {
		return err
	}
	return wrap("cuStreamSynchronize after read of "+b.name, b.ctx.stream.Synchronize())
}

// Fill32 sets every 32-bit word of the buffer to v (Size must be a multiple
// of 4).
func (b *Buffer) Fill32(v uint32) error {
	if err := b.span("fill", 0, b.size); err != nil {
		return err
	}
	if b.size%4 != 0 {
		return fmt.Errorf("cuda: fill %s: size %d not a multiple of 4", b.name, b.size)
	}
	release, err := b.ctx.bind()
	if err != nil {
		return err
	}
	defer release()
	return wrap("cuMemsetD32Async "+b.name, cu.MemsetD32Async(b.ptr, uint(v), b.size/4, b.ctx.stream))
}

// Scalar is an element type that moves between host and device as is.
type Scalar interface {
	~float32 | ~int32 | ~uint32 | ~uint16 | ~uint8 | ~int8
}

// AsBytes views s as its bytes, without copying.
func AsBytes[T Scalar](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// Upload allocates a buffer holding a copy of s.
func Upload[T Scalar](c *Context, name string, s []T) (*Buffer, error) {
	src := AsBytes(s)
	b, err := c.Alloc(name, int64(len(src)))
	if err != nil {
		return nil, err
	}
	if err := b.Write(0, src); err != nil {
		b.Free()
		return nil, err
	}
	return b, nil
}

// Download copies the buffer's first len(dst) elements into dst.
func Download[T Scalar](b *Buffer, dst []T) error {
	return b.Read(0, AsBytes(dst))
}
