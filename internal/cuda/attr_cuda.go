//go:build cuda

package cuda

/*
#include <cuda.h>
*/
import "C"

// MaxSharedOptIn is the most shared memory one block may use once its
// kernel has opted in (SetMaxDynamicShared).
func (c *Context) MaxSharedOptIn() (int, error) {
	release, err := c.bind()
	if err != nil {
		return 0, err
	}
	defer release()
	var v C.int
	r := C.cuDeviceGetAttribute(&v, C.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, C.CUdevice(c.dev))
	return int(v), check("cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)", r)
}

// SetMaxDynamicShared lets launches of k use up to n bytes of dynamic
// shared memory (above the default 48 KiB).
func (k *Kernel) SetMaxDynamicShared(n int) error {
	release, err := k.ctx.bind()
	if err != nil {
		return err
	}
	defer release()
	r := C.cuFuncSetAttribute(k.fn, C.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, C.int(n))
	return check("cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES) "+k.name, r)
}

// ResidentBlocks is how many blocks of k, launched with threads threads
// and shared bytes of dynamic shared memory, one multiprocessor holds at
// once.
func (k *Kernel) ResidentBlocks(threads, shared int) (int, error) {
	release, err := k.ctx.bind()
	if err != nil {
		return 0, err
	}
	defer release()
	var n C.int
	r := C.cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, k.fn, C.int(threads), C.size_t(shared))
	return int(n), check("cuOccupancyMaxActiveBlocksPerMultiprocessor "+k.name, r)
}
