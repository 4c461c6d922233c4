//go:build cuda

package cuda

/*
#include <cuda.h>
*/
import "C"

import (
	"fmt"
	"reflect"
)

// Error is a failed driver call: Op names what was being done (the driver
// function, and the kernel or buffer where one is involved), Code and Name
// are the CUresult.
type Error struct {
	Op   string
	Code int
	Name string // e.g. CUDA_ERROR_OUT_OF_MEMORY
}

func (e *Error) Error() string {
	return fmt.Sprintf("cuda: %s: %s (%d)", e.Op, e.Name, e.Code)
}

// check turns a CUresult into an *Error naming op, or nil on success.
func check(op string, r C.CUresult) error {
	if r == C.CUDA_SUCCESS {
		return nil
	}
	return &Error{Op: op, Code: int(r), Name: resultName(r)}
}

// resultName is the driver's name for r (CUDA_ERROR_...).
func resultName(r C.CUresult) string {
	var s *C.char
	if C.cuGetErrorName(r, &s) != C.CUDA_SUCCESS || s == nil {
		return fmt.Sprintf("CUresult(%d)", int(r))
	}
	return C.GoString(s)
}

// wrap converts an error returned by gorgonia.org/cu (whose CUresult type is
// an unexported integer) into an *Error naming op.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	v := reflect.ValueOf(err)
	if v.Kind() == reflect.Int {
		return check(op, C.CUresult(v.Int()))
	}
	return fmt.Errorf("cuda: %s: %w", op, err)
}
