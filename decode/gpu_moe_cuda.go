//go:build cuda

package decode

import (
	"fmt"

	"llmserve/internal/cuda"
	"llmserve/kernels"
	"llmserve/model"
)

// gpuMoEGroups is the scratch of the expert mixture grouped by expert
// (execMoEGrouped), for steps of up to stepRows tokens: each slot (token
// b's j-th pick, slot b·Used + j) is one row.
type gpuMoEGroups struct {
	in, out kernels.DevF32 // [stepRows·ExpertsUsed, Embd] the slots' input rows and their experts' outputs, in the grouped order
	idx     *cuda.Buffer   // [2·stepRows·ExpertsUsed] int32: the step's grouped order, then its inverse (moeGroups.order, inv)
	pick    []int32        // [stepRows·ExpertsUsed] the routing read back: each slot's expert
	host    []int32        // [2·stepRows·ExpertsUsed] idx as it is uploaded
	groups  moeGroups      // the routing of the layer being run, grouped
	runs    int            // expert mixtures run grouped so far (one per layer of a grouped step)
}

// gpuMoEGroupWidth is the f32 values per step row of gpuMoEGroups for m
// (expert mixtures only): the grouped input and output rows and the
// indices. The buffer estimate counts them for every engine without
// GPUOptions.MoEDense; one whose steps never group (deterministic:
// steps of at most MaxBucket) allocates none.
func gpuMoEGroupWidth(m *model.Model) int {
	return 2*m.ExpertsUsed*m.Embd + 2*m.ExpertsUsed
}

// initMoEGroups allocates the grouped scratch for an engine whose steps
// may group (stepRows above MaxBucket); nil otherwise.
func (e *GPUEngine) initMoEGroups() (*gpuMoEGroups, error) {
	m := e.m
	slots := e.stepRows * m.ExpertsUsed
	if !moeGroupedStep(e.stepRows, false) {
		return nil, nil
	}
	g := &gpuMoEGroups{pick: make([]int32, slots), host: make([]int32, 2*slots)}
	for _, b := range []*kernels.DevF32{&g.in, &g.out} {
		buf, err := e.alloc("grouped expert rows", int64(slots)*int64(m.Embd)*4)
		if err != nil {
			return nil, err
		}
		*b = kernels.DevF32{Ptr: buf.Ptr(), Rows: slots, Cols: m.Embd}
	}
	var err error
	if g.idx, err = e.alloc("grouped expert order", int64(2*slots)*4); err != nil {
		return nil, err
	}
	return g, nil
}

// execMoEGrouped queues an expert mixture of in (B rows, a step
// moeGroupedStep takes) into out grouped by expert, from the routing
// execMoE queued (pick: each token's st.Used experts, pw: their weights),
// read back to group the slots by expert on the host (one wait per
// layer); the slots' input rows gathered in that order, then per expert
// that any token chose the gate and up products over its rows only (the
// tensor-core products from matMulMin rows, the matrix-vector kernels
// below), the GLU and the down product into its grouped output rows; last
// each token's weighted sum of its picks' rows, as MoECombine sums them.
func (e *GPUEngine) execMoEGrouped(st *model.Step, w *gpuLayer, in, out kernels.DevF32, pick kernels.DevI32, pw kernels.DevF32) error {
	d, s, g := e.dev, &e.s, e.exec.groups
	B, k, E := in.Rows, st.Used, e.m.Experts
	n := B * k
	if g == nil || k > e.m.ExpertsUsed || n > g.in.Rows || in.Cols != g.in.Cols || out.Rows != B || out.Cols != g.out.Cols {
		return fmt.Errorf("expert mixture of %d×%d into %d×%d, %d experts per token, grouped: the grouped scratch holds %d slots of %d",
			B, in.Cols, out.Rows, out.Cols, k, g.slots(), e.m.Embd)
	}
	if err := d.Context().ReadAt(pick.Ptr, cuda.AsBytes(g.pick[:n])); err != nil {
		return fmt.Errorf("expert routing read back: %w", err)
	}
	gr := &g.groups
	if err := gr.group(g.pick[:n], E); err != nil {
		return err
	}
	copy(g.host, gr.order)
	copy(g.host[n:], gr.inv)
	if err := g.idx.Write(0, cuda.AsBytes(g.host[:2*n])); err != nil {
		return err
	}
	order := kernels.DevI32{Ptr: g.idx.Ptr(), Len: n}
	inv := kernels.DevI32{Ptr: g.idx.Ptr().Add(4 * int64(n)), Len: n}
	if err := d.MoEGather(kernels.MoEGatherOp{X: in, Order: order, Used: k, Out: g.in.Slice(0, n)}); err != nil {
		return err
	}
	act := gluAct(st.Act)
	gates, ups, downs := w.exps[st.Experts[0]], w.exps[st.Experts[1]], w.exps[st.Experts[2]]
	if len(gates) != E || len(ups) != E || len(downs) != E {
		return fmt.Errorf("expert mixture of %d experts with %d, %d and %d expert matrices", E, len(gates), len(ups), len(downs))
	}
	for ex := 0; ex < E; ex++ {
		lo, rows := gr.start[ex], gr.count[ex]
		if rows == 0 {
			continue
		}
		if rows > s.gate.Rows {
			return fmt.Errorf("expert %d chosen by %d slots, the gate scratch holds %d rows", ex, rows, s.gate.Rows)
		}
		gate, up := s.gate.Slice(0, rows), s.up.Slice(0, rows)
		if err := e.execMatMul(g.in.Slice(lo, lo+rows), kernels.MatVecSeg{W: gates[ex], Y: gate}, kernels.MatVecSeg{W: ups[ex], Y: up}); err != nil {
			return fmt.Errorf("ffn_gate_up_exps %d: %w", ex, err)
		}
		if err := d.GLUPair(gate, up, gate, act); err != nil {
			return err
		}
		if err := e.execMatMul(gate, kernels.MatVecSeg{W: downs[ex], Y: g.out.Slice(lo, lo+rows)}); err != nil {
			return fmt.Errorf("ffn_down_exps %d: %w", ex, err)
		}
	}
	if err := d.MoECombineRows(kernels.MoECombineRowsOp{Out: out, Y: g.out.Slice(0, n), Weight: pw, Inv: inv}); err != nil {
		return err
	}
	g.runs++
	return nil
}

// slots is the number of slots g holds (0 for none).
func (g *gpuMoEGroups) slots() int {
	if g == nil {
		return 0
	}
	return g.in.Rows
}
