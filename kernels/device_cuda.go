//go:build cuda

package kernels

import (
	"embed"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"

	"llmserve/internal/cuda"
)

// fatbins holds the kernels compiled by `make kernels` (scripts/gpu-fatbin.sh).
//
//go:embed fatbin/*.fatbin fatbin/*.ptx
var fatbins embed.FS

// Device is a CUDA device with llmserve's kernels loaded. Its methods queue
// work on the device's stream (or record it into the graph being captured)
// and return without waiting; Sync waits. A Device is used by one goroutine
// at a time.
type Device struct {
	ctx     *cuda.Context
	mods    []*cuda.Module
	kernels map[string]*cuda.Kernel // every kernel of every module, by name

	layer     int      // label of the following launches (see Label)
	op        string   // label of the following launches
	profiling bool     // launches record timing events into prof
	prof      *profile // events and launches of the current (or last) profile
	maxShared int      // dynamic shared memory the mvq kernels may use
	resident  map[residentKey]int
	wgmmaErr  error // why mmw.ptx (the wgmma products) is not loaded; nil when it is
	wgmmaPick bool  // the 16-bit products pick wg tiles (mmw.ptx loaded, LLMSERVE_WGMMA not 0)
	attVec    bool  // AttentionPaged picks attention_vec_pf16 where an instance fits (LLMSERVE_ATTENTION_VEC not 0)
	attVecMin int   // > 0 (default 32): attention_vec_pf16's _used twins with splits of this many positions at least (LLMSERVE_ATTENTION_VEC_MIN); 0: ATT_VEC_MIN, every split written
	preview   bool  // also the kernels not yet run on a device (attention_vec_pf16's _arch_used twins); SetPreview
}

// residentKey is a kernel launched with some dynamic shared memory.
type residentKey struct {
	name   string
	shared int
}

// kernelNames lists what each fat binary must provide; the matvec and
// embedding kernels are added per type by matvecKernels.
var kernelNames = map[string][]string{
	"ops":       {"rms_norm", "rms_norm_add", "add_bias", "add", "swiglu"},
	"mmq_prep":  {"mmq_prep"},
	"attention": {"kv_store", "attention_part_2", "attention_part_4", "attention_part_8", "attention_part_16", "attention_merge", "attention_merge_used", "rope_store"},
	"matvec":    nil,
	"mvq":       nil,
	"mmq":       mmqKernelNames(),
	"mmh":       mmhKernelNames(),
	"mmhq":      mmhqKernelNames(),
	"sample":    {"sample"},
	"ops_arch":  opsArchKernels(),
	"moe":       moeKernelNames(),

	"attention_prefill": prefillKernelNames(),
	"attention_paged":   pagedKernelNames(),
	"sample_mask":       {"sample_mask"},
}

// waitsItself says whether kernel name may be launched to overlap the
// kernel before it: it calls grid_wait (overlap.cuh) before it reads what
// earlier kernels wrote. Every kernel of mvq.cu does. attention_part is,
// so that it copies the cache rows the kernel ahead does not write while
// that kernel ends. rms_norm_add (a one-block-per-row kernel after a
// product) is, so that the next product's launch runs beside it.
// attention_merge waits too but is launched after
// attention_part has finished: on the H200, at position 512, launching both
// attention kernels serially measured 1B Q4_K_M 1387 → 1468 tok/s against
// both overlapping, and the 8B models the same within noise. The kernels
// only tests use are not.
func waitsItself(name string) bool {
	if slices.Contains(mvqKernels(), name) {
		return true
	}
	for _, p := range []string{"matvec_", "get_rows_", "rope_store", "sample", "attention_part_", "attention_vec_", "moe_mvq_", "rms_norm_add"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// SetOverlap allows or forbids a kernel to start before the one ahead of
// it has finished (programmatic dependent launch; on by default where the
// device and driver have it). It reports whether overlap is now on.
func (d *Device) SetOverlap(on bool) bool { return d.ctx.SetOverlap(on) }

// SetPreview lets the launches pick the kernels that have not yet run on a
// device (the engine's GPUOptions.Preview, LLMSERVE_GPU_PREVIEW=1).
func (d *Device) SetPreview(on bool) { d.preview = on }

// moduleKernels is what module mod must provide: its kernelNames entry,
// or the per-type lists of the matvec and mvq modules.
func moduleKernels(mod string, names []string) []string {
	switch mod {
	case "matvec":
		return matvecKernels()
	case "mvq":
		return mvqKernels()
	}
	return names
}

// OpenDevice opens CUDA device ordinal and loads the embedded kernels.
func OpenDevice(ordinal int) (*Device, error) {
	ctx, err := cuda.Open(ordinal)
	if err != nil {
		return nil, err
	}
	d := &Device{ctx: ctx, kernels: map[string]*cuda.Kernel{}, resident: map[residentKey]int{}}
	for mod, names := range kernelNames {
		image, err := fatbins.ReadFile(path.Join("fatbin", mod+".fatbin"))
		if err != nil {
			d.Close()
			return nil, fmt.Errorf("kernels: embedded %s.fatbin: %w", mod, err)
		}
		m, err := ctx.LoadModule(image)
		if err != nil {
			d.Close()
			return nil, fmt.Errorf("kernels: load %s.fatbin: %w", mod, err)
		}
		d.mods = append(d.mods, m)
		for _, name := range moduleKernels(mod, names) {
			k, err := m.Kernel(name)
			if err != nil {
				d.Close()
				return nil, fmt.Errorf("kernels: %s.fatbin: %w", mod, err)
			}
			if waitsItself(name) {
				k.SetWaits()
			}
			d.kernels[name] = k
		}
	}
	ctx.SetOverlap(true)
	if err := d.optInShared(); err != nil {
		d.Close()
		return nil, err
	}
	d.wgmmaErr = d.loadWGMMA()
	d.wgmmaPick = d.wgmmaErr == nil && os.Getenv("LLMSERVE_WGMMA") != "0"
	d.attVec = os.Getenv("LLMSERVE_ATTENTION_VEC") != "0"
	d.attVecMin = attVecMinFrom(os.Getenv("LLMSERVE_ATTENTION_VEC_MIN"))
	return d, nil
}

// loadWGMMA loads mmw.ptx, the 16-bit products on wgmma, which the driver
// compiles for sm_90a: on devices of compute capability 9.0 only, after
// optInShared (its kernels take d.maxShared as well). The error
// says why they are not there; the products then stay on mmh.cu.
func (d *Device) loadWGMMA() error {
	if major, minor := d.ctx.Capability(); major != 9 || minor != 0 {
		return fmt.Errorf("kernels: the wgmma products need compute capability 9.0, not %d.%d", major, minor)
	}
	ptx, err := fatbins.ReadFile("fatbin/mmw.ptx")
	if err != nil {
		return fmt.Errorf("kernels: embedded mmw.ptx: %w", err)
	}
	m, err := d.ctx.LoadModule(append(ptx[:len(ptx):len(ptx)], 0)) // PTX text, NUL-terminated
	if err != nil {
		return fmt.Errorf("kernels: load mmw.ptx (compiled by the driver for sm_90a): %w", err)
	}
	kernels := map[string]*cuda.Kernel{}
	for _, name := range mmwKernelNames() {
		k, err := m.Kernel(name)
		if err == nil {
			err = k.SetMaxDynamicShared(d.maxShared)
		}
		if err != nil {
			m.Unload()
			return fmt.Errorf("kernels: mmw.ptx: %w", err)
		}
		kernels[name] = k
	}
	d.mods = append(d.mods, m)
	for name, k := range kernels {
		d.kernels[name] = k
	}
	return nil
}

// WGMMA is nil when the 16-bit products may run on wgmma (mmw.ptx loaded),
// else why not.
func (d *Device) WGMMA() error { return d.wgmmaErr }

// optInShared lets the mvq, mmq, mmh, mmhq and attention_prefill kernels use the device's shared memory beyond
// the default 48 KiB per block (less 1 KiB for their static arrays).
func (d *Device) optInShared() error {
	n, err := d.ctx.MaxSharedOptIn()
	if err != nil {
		return fmt.Errorf("kernels: %w", err)
	}
	d.maxShared = n - 1024
	names := append(append(append(mvqKernels(), mmqKernelNames()...), mmhKernelNames()...), mmhqProductNames()...)
	for _, name := range append(names, prefillKernelNames()...) {
		if err := d.kernels[name].SetMaxDynamicShared(d.maxShared); err != nil {
			return fmt.Errorf("kernels: %w", err)
		}
	}
	return nil
}

// residentBlocks is how many blocks of kernel name (threads threads,
// shared bytes of dynamic shared memory) the whole device holds at once.
func (d *Device) residentBlocks(name string, threads, shared int) (int, error) {
	key := residentKey{name, shared}
	if n, ok := d.resident[key]; ok {
		return n, nil
	}
	k, ok := d.kernels[name]
	if !ok {
		return 0, fmt.Errorf("kernels: no kernel %q loaded", name)
	}
	per, err := k.ResidentBlocks(threads, shared)
	if err != nil {
		return 0, fmt.Errorf("kernels: %w", err)
	}
	if per < 1 {
		return 0, fmt.Errorf("kernels: %s with %d threads and %d bytes of shared memory does not fit a multiprocessor", name, threads, shared)
	}
	n := per * d.ctx.Multiprocessors()
	d.resident[key] = n
	return n, nil
}

// Context is the device's CUDA context, for allocations and graphs.
func (d *Device) Context() *cuda.Context { return d.ctx }

// Sync waits for the queued work and reports the first error it hit.
func (d *Device) Sync() error { return d.ctx.Sync() }

// Close unloads the kernels and releases the context.
func (d *Device) Close() error {
	first := d.closeProfile()
	for _, m := range d.mods {
		if err := m.Unload(); err != nil && first == nil {
			first = err
		}
	}
	d.mods = nil
	if err := d.ctx.Close(); err != nil && first == nil {
		first = err
	}
	return first
}

// launch runs kernel name.
func (d *Device) launch(name string, grid, block cuda.Dim3, shared int, args ...cuda.Arg) error {
	k, ok := d.kernels[name]
	if !ok {
		return fmt.Errorf("kernels: no kernel %q loaded", name)
	}
	if d.profiling {
		return d.profiledLaunch(k, grid, block, shared, args...)
	}
	return k.Launch(grid, block, shared, args...)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
