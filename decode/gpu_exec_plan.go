package decode

import "llmserve/model"

// execGroup is a run of a block's steps that the GPU executor
// (gpu_exec_cuda.go) launches as one product: Steps[First:First+N] are
// an optional norm, one to three matrix products of one input, and an
// optional residual add. The plan is made once per block from the
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
		plan = append(plan, g)
		i += g.N
	}
	return plan
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
