//go:build cuda

package cuda

/*
#include <cuda.h>
#include <stdint.h>
#include <string.h>

// llm_launch launches f with n parameters, each held in an 8-byte slot of
// args (a 4-byte parameter reads the slot's low half). With overlap it
// allows programmatic stream serialization: the kernel may start before
// the previous kernel in the stream has finished (it waits with
// griddepcontrol.wait before using its results).
static CUresult llm_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
		unsigned bx, unsigned by, unsigned bz, unsigned shm, CUstream s,
		uint64_t *args, int n, int overlap) {
	void *params[32];
	for (int i = 0; i < n && i < 32; i++) params[i] = &args[i];
	if (!overlap) return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shm, s, params, NULL);
	CUlaunchAttribute attr;
	memset(&attr, 0, sizeof attr);
	attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
	attr.value.programmaticStreamSerializationAllowed = 1;
	CUlaunchConfig cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.gridDimX = gx, cfg.gridDimY = gy, cfg.gridDimZ = gz;
	cfg.blockDimX = bx, cfg.blockDimY = by, cfg.blockDimZ = bz;
	cfg.sharedMemBytes = shm;
	cfg.hStream = s;
	cfg.attrs = &attr;
	cfg.numAttrs = 1;
	return cuLaunchKernelEx(&cfg, f, params, NULL);
}
*/
import "C"

import (
	"fmt"
	"math"
	"unsafe"

	"gorgonia.org/cu"
)

// Module is a loaded fat binary.
type Module struct {
	ctx *Context
	mod cu.Module
}

// LoadModule loads a fat binary (or cubin, or PTX) image; the driver picks
// the machine code for the device or compiles the image's PTX.
func (c *Context) LoadModule(image []byte) (*Module, error) {
	if len(image) == 0 {
		return nil, fmt.Errorf("cuda: load module: empty image")
	}
	release, err := c.bind()
	if err != nil {
		return nil, err
	}
	defer release()
	m, err := cu.LoadData(string(image))
	if err != nil {
		return nil, wrap("cuModuleLoadData", err)
	}
	return &Module{ctx: c, mod: m}, nil
}

// Kernel looks up a __global__ function by its (extern "C") name.
func (m *Module) Kernel(name string) (*Kernel, error) {
	release, err := m.ctx.bind()
	if err != nil {
		return nil, err
	}
	defer release()
	f, err := m.mod.Function(name)
	if err != nil {
		return nil, wrap("cuModuleGetFunction "+name, err)
	}
	return &Kernel{ctx: m.ctx, fn: *(*C.CUfunction)(unsafe.Pointer(&f)), name: name}, nil
}

// Unload releases the module.
func (m *Module) Unload() error {
	release, err := m.ctx.bind()
	if err != nil {
		return err
	}
	defer release()
	return wrap("cuModuleUnload", m.mod.Unload())
}

// Kernel is one function of a loaded module.
type Kernel struct {
	ctx     *Context
	fn      C.CUfunction
	name    string
	overlap bool // the kernel waits for the previous one itself (SetWaits)
}

// SetWaits says that k waits for the kernel before it in the stream by
// itself (griddepcontrol.wait before it reads that kernel's results or
// writes anything), so that when the context allows overlap (SetOverlap)
// it is launched to start early.
func (k *Kernel) SetWaits() { k.overlap = true }

// Name is the kernel's name.
func (k *Kernel) Name() string { return k.name }

// Arg is one kernel parameter in an 8-byte slot: a device pointer, or a
// 32-bit integer or float in the low half.
type Arg uint64

// P passes a device pointer.
func P(p DevPtr) Arg { return Arg(p) }

// I passes a 32-bit signed integer.
func I(v int) Arg { return Arg(uint32(int32(v))) }

// F passes a 32-bit float.
func F(v float32) Arg { return Arg(math.Float32bits(v)) }

// Dim3 is a grid or block shape; zero components count as 1.
type Dim3 struct{ X, Y, Z int }

func (d Dim3) c() (C.uint, C.uint, C.uint) {
	one := func(v int) C.uint {
		if v <= 0 {
			return 1
		}
		return C.uint(v)
	}
	return one(d.X), one(d.Y), one(d.Z)
}

// MaxArgs is the most parameters a launch may pass.
const MaxArgs = 32

// Launch queues the kernel on the context's stream (or records it into the
// graph being captured there).
func (k *Kernel) Launch(grid, block Dim3, shared int, args ...Arg) error {
	if len(args) > MaxArgs {
		return fmt.Errorf("cuda: launch %s: %d args, at most %d", k.name, len(args), MaxArgs)
	}
	release, err := k.ctx.bind()
	if err != nil {
		return err
	}
	defer release()
	gx, gy, gz := grid.c()
	bx, by, bz := block.c()
	var argp *C.uint64_t
	if len(args) > 0 {
		argp = (*C.uint64_t)(unsafe.Pointer(&args[0]))
	}
	s := C.CUstream(unsafe.Pointer(k.ctx.stream.C()))
	overlap, call := C.int(0), "cuLaunchKernel "
	if k.overlap && k.ctx.overlap {
		overlap, call = 1, "cuLaunchKernelEx "
	}
	r := C.llm_launch(k.fn, gx, gy, gz, bx, by, bz, C.uint(shared), s, argp, C.int(len(args)), overlap)
	return check(call+k.name, r)
}
