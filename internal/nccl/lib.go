//go:build cgo

package nccl

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// The few NCCL types the calls need, declared here so that the build
// needs no nccl.h: ncclResult_t, ncclComm_t, ncclUniqueId (128 bytes).
typedef int nccl_result;
typedef void *nccl_comm;
typedef struct { char internal[128]; } nccl_unique_id;

// One trampoline per function: Go cannot call a C function pointer.
static nccl_result nccl_get_version(void *f, int *v) {
	return ((nccl_result (*)(int *))f)(v);
}
static nccl_result nccl_get_unique_id(void *f, void *id) {
	return ((nccl_result (*)(nccl_unique_id *))f)((nccl_unique_id *)id);
}
static nccl_result nccl_comm_init_rank(void *f, nccl_comm *comm, int n, const void *id, int rank) {
	nccl_unique_id u;
	memcpy(&u, id, sizeof u);
	return ((nccl_result (*)(nccl_comm *, int, nccl_unique_id, int))f)(comm, n, u, rank);
}
static nccl_result nccl_comm_init_all(void *f, nccl_comm *comms, int n, const int *devs) {
	return ((nccl_result (*)(nccl_comm *, int, const int *))f)(comms, n, devs);
}
static nccl_result nccl_all_reduce(void *f, uintptr_t send, uintptr_t recv, size_t count, int dtype, int op, nccl_comm comm, uintptr_t stream) {
	return ((nccl_result (*)(const void *, void *, size_t, int, int, nccl_comm, void *))f)(
		(const void *)send, (void *)recv, count, dtype, op, comm, (void *)stream);
}
static nccl_result nccl_call0(void *f) { return ((nccl_result (*)(void))f)(); }
static nccl_result nccl_comm_destroy(void *f, nccl_comm comm) {
	return ((nccl_result (*)(nccl_comm))f)(comm);
}
static const char *nccl_error_string(void *f, nccl_result r) {
	return ((const char *(*)(nccl_result))f)(r);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"unsafe"
)

// fn indexes the function table.
type fn int

const (
	fnGetVersion fn = iota
	fnGetUniqueID
	fnCommInitRank
	fnCommInitAll
	fnAllReduce
	fnGroupStart
	fnGroupEnd
	fnCommDestroy
	fnGetErrorString
	numFns
)

// Symbols are the functions Open resolves, by table index; a library
// without one of them is refused by name.
var Symbols = [numFns]string{
	"ncclGetVersion", "ncclGetUniqueId", "ncclCommInitRank", "ncclCommInitAll",
	"ncclAllReduce", "ncclGroupStart", "ncclGroupEnd", "ncclCommDestroy", "ncclGetErrorString",
}

// Lib is a loaded NCCL and its function table. Its methods may be called
// from any goroutine; NCCL's own rules (one communicator per device, a
// group around the calls of several ranks from one thread) still apply.
type Lib struct {
	path   string
	handle unsafe.Pointer         // the dlopen handle
	fns    [numFns]unsafe.Pointer // the resolved functions, by fn
}

// ErrNotFound is wrapped by Open when no library could be loaded.
var ErrNotFound = errors.New("nccl: library not found")

// Open loads NCCL from path or, when path is empty, from the first of
// Candidates that loads, and resolves every function of Symbols.
func Open(path string) (*Lib, error) {
	tries := defaultCandidates()
	if path != "" {
		tries = []string{path}
	}
	var failures []string
	for _, p := range tries {
		h, err := dlopen(p)
		if err != nil {
			failures = append(failures, err.Error())
			continue
		}
		l := &Lib{path: p, handle: h}
		if err := l.resolve(); err != nil {
			C.dlclose(h)
			return nil, err
		}
		return l, nil
	}
	if path != "" {
		return nil, fmt.Errorf("%w at %s: %s", ErrNotFound, path, strings.Join(failures, "; "))
	}
	return nil, fmt.Errorf("%w (%s tried in %d places, the first: %s); install NCCL (PyTorch's wheels carry nvidia/nccl/lib/%s) or give its path with --nccl-lib",
		ErrNotFound, LibName, len(tries), failures[0], LibName)
}

func dlopen(path string) (unsafe.Pointer, error) {
	cs := C.CString(path)
	defer C.free(unsafe.Pointer(cs))
	h := C.dlopen(cs, C.RTLD_NOW|C.RTLD_LOCAL)
	if h == nil {
		return nil, fmt.Errorf("dlopen %s: %s", path, C.GoString(C.dlerror()))
	}
	return h, nil
}

// resolve fills the function table.
func (l *Lib) resolve() error {
	for i, name := range Symbols {
		cs := C.CString(name)
		C.dlerror()
		p := C.dlsym(l.handle, cs)
		C.free(unsafe.Pointer(cs))
		if p == nil {
			return fmt.Errorf("nccl: %s has no symbol %s: %s", l.path, name, C.GoString(C.dlerror()))
		}
		l.fns[i] = p
	}
	return nil
}

// Path is the file the library was loaded from.
func (l *Lib) Path() string { return l.path }

// Close unloads the library; communicators must be destroyed first.
func (l *Lib) Close() error {
	if l.handle == nil {
		return nil
	}
	if C.dlclose(l.handle) != 0 {
		return fmt.Errorf("nccl: dlclose %s: %s", l.path, C.GoString(C.dlerror()))
	}
	l.handle = nil
	return nil
}

// check turns an ncclResult_t into an error naming the call.
func (l *Lib) check(call string, r C.nccl_result) error {
	if r == 0 {
		return nil
	}
	msg := C.GoString(C.nccl_error_string(l.fns[fnGetErrorString], r))
	return fmt.Errorf("nccl: %s: %s (ncclResult %d)", call, msg, int(r))
}

// Version is NCCL's version code (e.g. 22105 for 2.21.5).
func (l *Lib) Version() (int, error) {
	var v C.int
	err := l.check("ncclGetVersion", C.nccl_get_version(l.fns[fnGetVersion], &v))
	return int(v), err
}

// UniqueID makes the id that the ranks of one communicator share.
func (l *Lib) UniqueID() (UniqueID, error) {
	var id UniqueID
	err := l.check("ncclGetUniqueId", C.nccl_get_unique_id(l.fns[fnGetUniqueID], unsafe.Pointer(&id[0])))
	return id, err
}

// Comm is one rank's communicator.
type Comm struct {
	lib  *Lib
	comm C.nccl_comm
	rank int
	size int
}

// Rank is the communicator's rank.
func (c *Comm) Rank() int { return c.rank }

// Size is the number of ranks.
func (c *Comm) Size() int { return c.size }

// noMulticast keeps NVLink multicast off in the communicators created
// after it (NCCL reads the variable at initialization).
func noMulticast() error {
	if err := os.Setenv("NCCL_NVLS_ENABLE", "0"); err != nil {
		return fmt.Errorf("nccl: NCCL_NVLS_ENABLE=0: %w", err)
	}
	return nil
}

// InitRank joins rank of an n-rank communicator identified by id, on the
// CUDA device current on the calling thread.
func (l *Lib) InitRank(n int, id UniqueID, rank int) (*Comm, error) {
	if n < 1 || rank < 0 || rank >= n {
		return nil, fmt.Errorf("nccl: rank %d of %d", rank, n)
	}
	if err := noMulticast(); err != nil {
		return nil, err
	}
	c := &Comm{lib: l, rank: rank, size: n}
	r := C.nccl_comm_init_rank(l.fns[fnCommInitRank], &c.comm, C.int(n), unsafe.Pointer(&id[0]), C.int(rank))
	if err := l.check(fmt.Sprintf("ncclCommInitRank(rank %d of %d)", rank, n), r); err != nil {
		return nil, err
	}
	return c, nil
}

// InitAll creates one communicator per device of devices, from one
// thread; comm i is rank i on devices[i].
func (l *Lib) InitAll(devices []int) ([]*Comm, error) {
	n := len(devices)
	if n < 1 {
		return nil, fmt.Errorf("nccl: ncclCommInitAll over no devices")
	}
	if err := noMulticast(); err != nil {
		return nil, err
	}
	raw := (*C.nccl_comm)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.nccl_comm(nil)))))
	devs := (*C.int)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.int(0)))))
	defer C.free(unsafe.Pointer(raw))
	defer C.free(unsafe.Pointer(devs))
	ds := unsafe.Slice(devs, n)
	for i, d := range devices {
		ds[i] = C.int(d)
	}
	if err := l.check(fmt.Sprintf("ncclCommInitAll(%v)", devices), C.nccl_comm_init_all(l.fns[fnCommInitAll], raw, C.int(n), devs)); err != nil {
		return nil, err
	}
	comms := make([]*Comm, n)
	for i, c := range unsafe.Slice(raw, n) {
		comms[i] = &Comm{lib: l, comm: c, rank: i, size: n}
	}
	return comms, nil
}

// AllReduce reduces count elements of type dt at device address send over
// the ranks into recv (which may be send) with op, queued on the CUDA
// stream (a CUstream; 0 is the default stream). The call is capturable
// into a CUDA graph.
func (c *Comm) AllReduce(send, recv uintptr, count int, dt DataType, op RedOp, stream uintptr) error {
	r := C.nccl_all_reduce(c.lib.fns[fnAllReduce], C.uintptr_t(send), C.uintptr_t(recv), C.size_t(count), C.int(dt), C.int(op), c.comm, C.uintptr_t(stream))
	return c.lib.check(fmt.Sprintf("ncclAllReduce(rank %d, %d values)", c.rank, count), r)
}

// GroupStart begins a group of calls (the ranks' calls issued from one
// thread); GroupEnd launches them.
func (l *Lib) GroupStart() error {
	return l.check("ncclGroupStart", C.nccl_call0(l.fns[fnGroupStart]))
}

// GroupEnd ends the group GroupStart began.
func (l *Lib) GroupEnd() error {
	return l.check("ncclGroupEnd", C.nccl_call0(l.fns[fnGroupEnd]))
}

// Destroy frees the communicator.
func (c *Comm) Destroy() error {
	if c.comm == nil {
		return nil
	}
	err := c.lib.check(fmt.Sprintf("ncclCommDestroy(rank %d)", c.rank), C.nccl_comm_destroy(c.lib.fns[fnCommDestroy], c.comm))
	c.comm = nil
	return err
}
