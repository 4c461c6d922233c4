//go:build cuda

package cuda

/*
#cgo CFLAGS: -D_GNU_SOURCE
#cgo LDFLAGS: -ldl
#include <cuda.h>
#include <dlfcn.h>

static CUresult llm_init_result = CUDA_SUCCESS;

// cuInit stands in for the driver's, which the executable's own definition
// shadows: gorgonia.org/cu calls cuInit from a package init and exits the
// process when it fails (no GPU, no usable driver). This one passes the
// call on to the driver and records a failure instead of returning it, so
// that a binary built with CUDA starts anywhere and Open reports the
// failure, and the caller can run on the CPU.
CUresult cuInit(unsigned int flags) {
	static CUresult (*driver)(unsigned int);
	if (driver == NULL) driver = (CUresult(*)(unsigned int))dlsym(RTLD_NEXT, "cuInit");
	CUresult r = driver != NULL ? driver(flags) : CUDA_ERROR_NOT_INITIALIZED;
	if (r != CUDA_SUCCESS) llm_init_result = r;
	return CUDA_SUCCESS;
}

static CUresult llm_init_error(void) { return llm_init_result; }
*/
import "C"

// initError is the driver's answer to cuInit at start-up: nil, or why no
// CUDA device can be used.
func initError() error {
	return check("cuInit", C.llm_init_error())
}
