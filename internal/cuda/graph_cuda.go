//go:build cuda

package cuda

/*
#include <cuda.h>
#include <stdint.h>
#include <stdlib.h>

static CUresult llm_begin_capture(CUstream s) {
	return cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED);
}

// llm_kernel_nodes stores up to cap kernel nodes of g in out and their
// count in *n.
static CUresult llm_kernel_nodes(CUgraph g, CUgraphNode *out, size_t cap, size_t *n) {
	size_t total = 0;
	CUresult r = cuGraphGetNodes(g, NULL, &total);
	if (r != CUDA_SUCCESS) return r;
	CUgraphNode *all = (CUgraphNode *)malloc((total ? total : 1) * sizeof(CUgraphNode));
	if (!all) return CUDA_ERROR_OUT_OF_MEMORY;
	r = cuGraphGetNodes(g, all, &total);
	*n = 0;
	for (size_t i = 0; r == CUDA_SUCCESS && i < total; i++) {
		CUgraphNodeType t;
		r = cuGraphNodeGetType(all[i], &t);
		if (r == CUDA_SUCCESS && t == CU_GRAPH_NODE_TYPE_KERNEL) {
			if (*n < cap) out[*n] = all[i];
			(*n)++;
		}
	}
	free(all);
	return r;
}

// llm_set_kernel_arg replaces parameter idx (of nargs) of a kernel node in
// the instantiated graph e by the value in *v, keeping the others as the
// node in the template graph holds them.
static CUresult llm_set_kernel_arg(CUgraphExec e, CUgraphNode node, int nargs, int idx, uint64_t *v) {
	CUDA_KERNEL_NODE_PARAMS p;
	CUresult r = cuGraphKernelNodeGetParams(node, &p);
	if (r != CUDA_SUCCESS) return r;
	if (p.kernelParams == NULL || nargs > 32 || idx < 0 || idx >= nargs) return CUDA_ERROR_INVALID_VALUE;
	void *params[32];
	for (int i = 0; i < nargs; i++) params[i] = p.kernelParams[i];
	params[idx] = v;
	p.kernelParams = params;
	return cuGraphExecKernelNodeSetParams(e, node, &p);
}

static CUresult llm_node_func(CUgraphNode node, CUfunction *f) {
	CUDA_KERNEL_NODE_PARAMS p;
	CUresult r = cuGraphKernelNodeGetParams(node, &p);
	*f = p.func;
	return r;
}

static CUresult llm_exec_update(CUgraphExec e, CUgraph g, int *result) {
	CUgraphNode errNode;
	CUgraphExecUpdateResult res;
	CUresult r = cuGraphExecUpdate(e, g, &errNode, &res);
	*result = (int)res;
	return r;
}
*/
import "C"

import (
	"fmt"
	"time"
	"unsafe"
)

// Graph is a captured sequence of kernels (the template graph) and its
// executable instance.
type Graph struct {
	ctx         *Context
	graph       C.CUgraph
	exec        C.CUgraphExec
	capture     time.Duration // how long the last capture took
	instantiate time.Duration // how long the last instantiation (or in-place update) took
}

// GraphNode is a kernel node of a Graph's template.
type GraphNode struct{ n C.CUgraphNode }

// Capture records the work fn queues on the context's stream into a graph
// and instantiates it. fn runs with the context bound and must not
// synchronize the stream.
func (c *Context) Capture(fn func() error) (*Graph, error) {
	release, err := c.bind()
	if err != nil {
		return nil, err
	}
	defer release()
	start := time.Now()
	g, err := c.capture(fn)
	if err != nil {
		return nil, err
	}
	gr := &Graph{ctx: c, graph: g, capture: time.Since(start)}
	start = time.Now()
	if err := check("cuGraphInstantiateWithFlags", C.cuGraphInstantiateWithFlags(&gr.exec, g, 0)); err != nil {
		C.cuGraphDestroy(g)
		return nil, err
	}
	gr.instantiate = time.Since(start)
	return gr, nil
}

// CaptureTime is how long the last capture of the graph took (fn's host
// time included).
func (g *Graph) CaptureTime() time.Duration { return g.capture }

// InstantiateTime is how long the last instantiation, or in-place update
// by Recapture, took.
func (g *Graph) InstantiateTime() time.Duration { return g.instantiate }

// Nodes is the number of nodes of the template graph (of every type).
func (g *Graph) Nodes() (int, error) {
	release, err := g.ctx.bind()
	if err != nil {
		return 0, err
	}
	defer release()
	var n C.size_t
	if err := check("cuGraphGetNodes", C.cuGraphGetNodes(g.graph, nil, &n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

func (c *Context) capture(fn func() error) (C.CUgraph, error) {
	s := C.CUstream(unsafe.Pointer(c.stream.C()))
	if err := check("cuStreamBeginCapture", C.llm_begin_capture(s)); err != nil {
		return nil, err
	}
	ferr := fn()
	var g C.CUgraph
	err := check("cuStreamEndCapture", C.cuStreamEndCapture(s, &g))
	if ferr != nil {
		if g != nil {
			C.cuGraphDestroy(g)
		}
		return nil, fmt.Errorf("cuda: capture: %w", ferr)
	}
	return g, err
}

// Launch replays the graph on the context's stream.
func (g *Graph) Launch() error {
	release, err := g.ctx.bind()
	if err != nil {
		return err
	}
	defer release()
	return check("cuGraphLaunch", C.cuGraphLaunch(g.exec, C.CUstream(unsafe.Pointer(g.ctx.stream.C()))))
}

// KernelNodes lists the template graph's kernel nodes.
func (g *Graph) KernelNodes() ([]GraphNode, error) {
	release, err := g.ctx.bind()
	if err != nil {
		return nil, err
	}
	defer release()
	var n C.size_t
	if err := check("cuGraphGetNodes", C.llm_kernel_nodes(g.graph, nil, 0, &n)); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	raw := make([]C.CUgraphNode, int(n))
	cbuf := C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof(raw[0])))
	defer C.free(cbuf)
	if err := check("cuGraphGetNodes", C.llm_kernel_nodes(g.graph, (*C.CUgraphNode)(cbuf), n, &n)); err != nil {
		return nil, err
	}
	copy(raw, unsafe.Slice((*C.CUgraphNode)(cbuf), int(n)))
	out := make([]GraphNode, len(raw))
	for i, r := range raw {
		out[i] = GraphNode{r}
	}
	return out, nil
}

// Runs says whether a kernel node launches k.
func (g *Graph) Runs(node GraphNode, k *Kernel) (bool, error) {
	release, err := g.ctx.bind()
	if err != nil {
		return false, err
	}
	defer release()
	var f C.CUfunction
	if err := check("cuGraphKernelNodeGetParams", C.llm_node_func(node.n, &f)); err != nil {
		return false, err
	}
	return f == k.fn, nil
}

// SetKernelArg changes parameter idx (of the kernel's nargs) of one kernel
// node in the executable graph to v; later replays use the new value.
func (g *Graph) SetKernelArg(node GraphNode, nargs, idx int, v Arg) error {
	release, err := g.ctx.bind()
	if err != nil {
		return err
	}
	defer release()
	slot := (*C.uint64_t)(C.malloc(8))
	defer C.free(unsafe.Pointer(slot))
	*slot = C.uint64_t(v)
	return check(fmt.Sprintf("cuGraphExecKernelNodeSetParams (arg %d of %d)", idx, nargs),
		C.llm_set_kernel_arg(g.exec, node.n, C.int(nargs), C.int(idx), slot))
}

// Recapture records fn again and updates the executable graph in place
// when the topology is unchanged (cuGraphExecUpdate), instantiating it anew
// otherwise.
func (g *Graph) Recapture(fn func() error) error {
	release, err := g.ctx.bind()
	if err != nil {
		return err
	}
	defer release()
	start := time.Now()
	ng, err := g.ctx.capture(fn)
	if err != nil {
		return err
	}
	g.capture = time.Since(start)
	start = time.Now()
	defer func() { g.instantiate = time.Since(start) }()
	var res C.int
	if C.llm_exec_update(g.exec, ng, &res) != C.CUDA_SUCCESS {
		var exec C.CUgraphExec
		if err := check("cuGraphInstantiateWithFlags", C.cuGraphInstantiateWithFlags(&exec, ng, 0)); err != nil {
			C.cuGraphDestroy(ng)
			return err
		}
		C.cuGraphExecDestroy(g.exec)
		g.exec = exec
	}
	C.cuGraphDestroy(g.graph)
	g.graph = ng
	return nil
}

// WriteDot writes the template graph in Graphviz form to path.
func (g *Graph) WriteDot(path string) error {
	release, err := g.ctx.bind()
	if err != nil {
		return err
	}
	defer release()
	cp := C.CString(path)
	defer C.free(unsafe.Pointer(cp))
	return check("cuGraphDebugDotPrint", C.cuGraphDebugDotPrint(g.graph, cp, C.CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE))
}

// Destroy releases the graph and its instance.
func (g *Graph) Destroy() error {
	if g == nil || g.exec == nil {
		return nil
	}
	release, err := g.ctx.bind()
	if err != nil {
		return err
	}
	defer release()
	err = check("cuGraphExecDestroy", C.cuGraphExecDestroy(g.exec))
	if e := check("cuGraphDestroy", C.cuGraphDestroy(g.graph)); err == nil {
		err = e
	}
	g.exec, g.graph = nil, nil
	return err
}
