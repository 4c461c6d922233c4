package decode

import "llmserve/model"

// execGroup is a run of a block's steps that the GPU executor
// (gpu_exec_cuda.go) launches as one product: Steps[First:First+N] are
// an optional norm, one to three matrix products of one input, and an
// optional residual add or gated activation; or a norm and the residual
// add of its result (NormAdd). The plan is made once per block from the
// description, and holds for every step size.
type execGroup struct {
	First, N int
	// Norm: the first step is a full-width RMSNorm whose result only
	// the products read, so that on the matrix-vector kernels they
	// normalize their input themselves (the tensor-core products run
	// the norm first).
	Norm bool
	// Residual: the last step adds the one product's result to another
	// buffer, which nothing else reads: the product accumulates into
	// that buffer instead.
	Residual bool
	// GLU: the last step gates the products' results, which nothing else
	// reads: the gate and up products (or the two halves of one fused
	// gate/up product) run as one gated product into the GLU's output,
	// on the matrix-vector kernels (the tensor-core products run the GLU
	// after them).
	GLU bool
	// Split: the last Split steps copy column ranges of the one product's
	// result, which nothing else reads, into buffers of their own: the
	// matrix's row ranges run as the products of those buffers (a fused
	// Q/K/V matrix).
	Split int
	// NormAdd: the two steps are a full-width RMSNorm and the add of its
	// result (which nothing else reads) into another buffer: one launch.
	NormAdd bool
	// Rope: the products (or splits) write Q, K and V and the group's last
	// two steps rotate Q and K in place for the attention step right
	// after: on the matrix-vector kernels the rotation and the cache write
	// run with the products (the engine's RopeEpilogue), and the
	// attention step then stores nothing.
	Rope bool
}

// execPlan groups block l's steps of m for the GPU executor; a step no
// group takes is a group of its own.
func execPlan(m *model.Model, l int) []execGroup {
	steps := m.Graph.Blocks[l]
	rest := append(append([][]model.Step{}, m.Graph.Blocks[l+1:]...), m.Graph.Output)
	// dead says whether buffer b is written before it is read after step
	// i of the block (or never read again).
	dead := func(b model.Buf, i int) bool {
		return execDead(b, append([][]model.Step{steps[i+1:]}, rest...))
	}
	var plan []execGroup
	for i := 0; i < len(steps); {
		g := execGroup{First: i, N: 1}
		if execNormAdd(m, l, steps, i) && dead(steps[i].Out, i+1) {
			g.N, g.NormAdd = 2, true
			plan = append(plan, g)
			i += 2
			continue
		}
		j := i // the first product
		if s := steps[i]; s.Op == model.OpNorm && s.W != model.NoTensor && m.Layers[l][s.W] != nil &&
			int(m.Layers[l][s.W].Dims[0]) == m.BufWidth(s.In) && i+1 < len(steps) && steps[i+1].Op == model.OpMatMul && steps[i+1].In == s.Out {
			j = i + 1
		}
		k := j // past the last product
		for k < len(steps) && k-j < 3 && execJoins(steps, j, k) {
			k++
		}
		if k == j {
			plan = append(plan, g)
			i++
			continue
		}
		if j > i {
			if dead(steps[i].Out, k-1) && !execWritesAny(steps[j:k], steps[i].In) {
				g.Norm = true
			} else {
				// The norm's result is read later: the products read it.
				plan = append(plan, g)
				i++
				continue
			}
		}
		g.N = k - i
		if p := steps[j]; !g.Norm && k == j+1 && k < len(steps) && p.Bias == model.NoTensor {
			if a := steps[k]; a.Op == model.OpAdd && a.In == p.Out && a.Out != p.Out && a.Out != p.In && dead(p.Out, k) {
				g.Residual, g.N = true, g.N+1
			}
		}
		if !g.Residual && k < len(steps) && execGLU(m, l, steps, j, k) {
			// The up half's output (or scratch) and the gate's, unless the
			// GLU writes over it, are left unwritten.
			up := model.BufUp
			if k == j+2 {
				up = steps[j+1].Out
			}
			if dead(up, k) && (steps[k].Out == steps[j].Out || dead(steps[j].Out, k)) {
				g.GLU, g.N = true, g.N+1
			}
		}
		if !g.Residual && !g.GLU && k == j+1 {
			n := 0
			for k+n < len(steps) && n < 3 && execSplits(steps, j, k+n) {
				n++
			}
			if n > 0 && steps[j].Bias == model.NoTensor && dead(steps[j].Out, k+n-1) {
				g.Split, g.N = n, g.N+n
			}
		}
		if !g.Residual && !g.GLU && execRope(m, steps, g.First+g.N) {
			g.Rope, g.N = true, g.N+2
		}
		plan = append(plan, g)
		i += g.N
	}
	return plan
}

// execRope says whether steps i and i+1 rotate the Q and K that the steps
// before wrote (their last three outputs Q, K and V, in this order), as
// the model's rotation (m.RopeNeox), right before an attention step.
func execRope(m *model.Model, steps []model.Step, i int) bool {
	if i < 3 || i+2 >= len(steps) || steps[i+2].Op != model.OpAttention {
		return false
	}
	for j, b := range []model.Buf{model.BufQ, model.BufK, model.BufV} {
		if steps[i-3+j].Out != b {
			return false
		}
	}
	q, k := steps[i], steps[i+1]
	return q.Op == model.OpRope && k.Op == model.OpRope && q.In == model.BufQ && q.Out == model.BufQ &&
		k.In == model.BufK && k.Out == model.BufK && q.Neox == m.RopeNeox() && k.Neox == m.RopeNeox()
}

// execSplits says whether step i copies columns of product j's result
// into a buffer that is not the product's input nor written by the steps
// from product j to i.
func execSplits(steps []model.Step, j, i int) bool {
	st := steps[i]
	return st.Op == model.OpSplit && st.In == steps[j].Out && st.Out != steps[j].In && !execWritesAny(steps[j:i], st.Out)
}

// execNormAdd says whether steps i and i+1 of block l are a full-width
// RMSNorm with a weight and the add of its result into another buffer
// than the norm's input (Out += In).
func execNormAdd(m *model.Model, l int, steps []model.Step, i int) bool {
	if i+1 >= len(steps) {
		return false
	}
	n, a := steps[i], steps[i+1]
	return n.Op == model.OpNorm && n.W != model.NoTensor && m.Layers[l][n.W] != nil && int(m.Layers[l][n.W].Dims[0]) == m.BufWidth(n.In) &&
		a.Op == model.OpAdd && a.In == n.Out && a.Out != n.In && a.Out != n.Out && m.BufWidth(a.Out) == m.BufWidth(n.In)
}

// execGLU says whether step k gates the products steps[j:k] of block l:
// two products, gate (into the GLU's input) and up (into its second
// input), or one product into a fused gate/up buffer (gate values, then
// up values, per row) of a matrix without bias whose halves run as the
// two, with BufUp as the scratch of the up half. The GLU writes
// neither the products' input nor the up half's scratch.
func execGLU(m *model.Model, l int, steps []model.Step, j, k int) bool {
	st := steps[k]
	if st.Op != model.OpGLU || st.Out == steps[j].In || st.In != steps[j].Out {
		return false
	}
	switch k - j {
	case 2:
		return st.In2 == steps[j+1].Out && st.Out != steps[j+1].Out
	case 1:
		p, w := steps[j], m.Layers[l][steps[j].W]
		return st.In2 == model.NoBuf && p.Bias == model.NoTensor && w != nil && len(w.Dims) == 2 &&
			int(w.Dims[1]) == 2*m.BufWidth(st.Out) && m.BufWidth(model.BufUp) == m.BufWidth(st.Out) &&
			st.Out != model.BufUp && p.In != model.BufUp
	}
	return false
}

// execJoins says whether step k is a product that joins the products
// steps[j:k] (of one input, none writing it, each into its own buffer).
func execJoins(steps []model.Step, j, k int) bool {
	s := steps[k]
	if s.Op != model.OpMatMul || s.In != steps[j].In || s.Out == s.In {
		return false
	}
	for _, p := range steps[j:k] {
		if p.Out == s.Out {
			return false
		}
	}
	return true
}

// execWritesAny says whether one of steps writes b.
func execWritesAny(steps []model.Step, b model.Buf) bool {
	for _, s := range steps {
		if s.Out == b {
			return true
		}
	}
	return false
}

// execDead says whether buffer b is written before it is read in the
// steps of runs, in order (or never read): what it holds then is not
// needed. The residual stream never is.
func execDead(b model.Buf, runs [][]model.Step) bool {
	if b == model.BufX {
		return false
	}
	for _, steps := range runs {
		for _, s := range steps {
			if execReads(s, b) {
				return false
			}
			if s.Out == b || (s.Op == model.OpAttention && b == model.BufAtt) {
				return true
			}
		}
	}
	return true
}

// execReads says whether step s reads buffer b.
func execReads(s model.Step, b model.Buf) bool {
	switch {
	case s.In == b || s.In2 == b:
		return true
	case s.Op == model.OpAttention:
		return b == model.BufQ || b == model.BufK || b == model.BufV
	case s.Op == model.OpAdd || s.Op == model.OpRope:
		return s.Out == b // Out += In, and rotations in place
	}
	return false
}
