//go:build cuda

package cuda

import "unsafe"

// StreamHandle is the CUstream every operation of the context is queued
// on, for libraries called outside this package (NCCL's collectives take
// it as their cudaStream_t).
func (c *Context) StreamHandle() uintptr { return uintptr(unsafe.Pointer(c.stream.C())) }
