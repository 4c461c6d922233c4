//go:build cuda

package decode

import (
	"fmt"

	"llmserve/kernels"
	"llmserve/model"
)

// gpuExec is the executor of the model's description (m.Graph) for the
// models the fused layer does not take (gemma2, phi3, expert mixtures):
// it walks the input steps, each block's steps and the steps after the
// output product over device buffers, one launch (or a few) per step.
// The buffers the fused path has serve the description's buffers of the
// same role (BufX is x, BufCur xn, BufQ q...); the ones below are its own.
// Every step a graph may hold runs on the device with no copy to the
// host, so it replays from a CUDA graph like the fused path's; only an
// expert mixture over a larger step reads its routing back
// (gpu_moe_cuda.go).
type gpuExec struct {
	qkv    kernels.DevF32 // [stepRows, (Heads+2·KVHeads)·HeadDim] fused Q/K/V product, when the pass has one
	gateUp kernels.DevF32 // [stepRows, 2·FFN] fused gate/up product, when the pass has one
	probs  kernels.DevF32 // [stepRows, Experts] router logits (expert mixtures)
	route  kernels.DevF32 // [stepRows, Experts] expert weights per token, 0 for experts not chosen
	moeY   kernels.DevF32 // [stepRows, Embd] one expert's output
	moeAcc kernels.DevF32 // [stepRows, Embd] the weighted sum over experts
	pick   kernels.DevI32 // [stepRows·ExpertsUsed] the chosen experts per token, the most probable first
	pickW  kernels.DevF32 // [stepRows, ExpertsUsed] their weights
	plans  [][]execGroup  // [layer]: the block's steps as launched (gpu_exec_plan.go)
	groups *gpuMoEGroups  // the scratch of expert mixtures grouped by expert (gpu_moe_cuda.go); nil without experts or steps over MaxBucket
	// stored says that the Q/K/V products just queued also rotated Q and K
	// and wrote K and V to the cache (an execGroup with Rope on the
	// matrix-vector kernels): the attention step that follows stores
	// nothing, and clears it.
	stored bool
}

// gpuExecWidth is the f32 values per step row of the executor's own
// buffers for m (0 for a model the fused layer takes); grouped counts the
// scratch of expert mixtures grouped by expert (unless GPUOptions.MoEDense).
func gpuExecWidth(m *model.Model, grouped bool) int {
	if gpuFuses(m) == nil {
		return 0
	}
	used := m.Graph.Buffers()
	w := 0
	if used[model.BufQKV] {
		w += m.BufWidth(model.BufQKV)
	}
	if used[model.BufGateUp] {
		w += m.BufWidth(model.BufGateUp)
	}
	if gpuHasMoE(m) {
		w += 2*m.Experts + 2*m.Embd + 2*m.ExpertsUsed
		if grouped {
			w += gpuMoEGroupWidth(m)
		}
	}
	return w
}

func gpuHasMoE(m *model.Model) bool {
	for _, b := range m.Graph.Blocks {
		for _, s := range b {
			if s.Op == model.OpMoE {
				return true
			}
		}
	}
	return false
}

// initExec allocates the executor's buffers when m needs it (e.exec stays
// nil for a model the fused layer takes).
func (e *GPUEngine) initExec() error {
	m, S := e.m, e.stepRows
	if gpuFuses(m) == nil {
		return nil
	}
	var err error
	f32 := func(name string, need bool, cols int) kernels.DevF32 {
		if err != nil || !need {
			return kernels.DevF32{}
		}
		b, aerr := e.alloc(name, int64(S)*int64(cols)*4)
		if aerr != nil {
			err = aerr
			return kernels.DevF32{}
		}
		return kernels.DevF32{Ptr: b.Ptr(), Rows: S, Cols: cols}
	}
	used, moe := m.Graph.Buffers(), gpuHasMoE(m)
	x := &gpuExec{
		qkv:    f32("qkv", used[model.BufQKV], m.BufWidth(model.BufQKV)),
		gateUp: f32("gate_up", used[model.BufGateUp], m.BufWidth(model.BufGateUp)),
		probs:  f32("router logits", moe, m.Experts),
		route:  f32("expert weights", moe, m.Experts),
		moeY:   f32("expert output", moe, m.Embd),
		moeAcc: f32("expert sum", moe, m.Embd),
		pickW:  f32("chosen expert weights", moe, m.ExpertsUsed),
	}
	if pick := f32("chosen experts", moe, m.ExpertsUsed); pick.Ptr != 0 {
		x.pick = kernels.DevI32{Ptr: pick.Ptr, Len: S * m.ExpertsUsed}
	}
	if err == nil && moe && !e.opts.MoEDense {
		x.groups, err = e.initMoEGroups()
	}
	if err != nil {
		return err
	}
	for l := range m.Graph.Blocks {
		x.plans = append(x.plans, execPlan(m, l))
	}
	e.exec = x
	return nil
}

// execBuf is the first B rows of buffer b (BufLogits: of the logits).
func (e *GPUEngine) execBuf(b model.Buf, B int) kernels.DevF32 {
	s, x := &e.s, e.exec
	var t kernels.DevF32
	switch b {
	case model.BufX:
		t = s.x
	case model.BufCur:
		t = s.xn
	case model.BufQ:
		t = s.q
	case model.BufK:
		t = s.k
	case model.BufV:
		t = s.v
	case model.BufAtt:
		t = s.att
	case model.BufGate:
		t = s.gate
	case model.BufUp:
		t = s.up
	case model.BufQKV:
		t = x.qkv
	case model.BufGateUp:
		t = x.gateUp
	case model.BufLogits:
		t = s.logits
	default:
		return kernels.DevF32{}
	}
	return t.Slice(0, B)
}

// execInput runs the input steps on the B embedded tokens (none for a
// model the fused layer takes).
func (e *GPUEngine) execInput(B int) error {
	if e.exec == nil {
		return nil
	}
	for i := range e.m.Graph.Input {
		st := &e.m.Graph.Input[i]
		if err := e.op(-1, st.Name, func() error { return e.execStep(st, -1, B, nil) }); err != nil {
			return err
		}
	}
	return nil
}

// execOutput runs the steps after the output product on rows rows of
// logits.
func (e *GPUEngine) execOutput(rows int) error {
	if e.exec == nil || rows == 0 {
		return nil
	}
	out := e.m.Graph.Output
	for i := 2; i < len(out); i++ {
		st := &out[i]
		if err := e.op(-1, st.Name, func() error { return e.execStep(st, -1, rows, nil) }); err != nil {
			return err
		}
	}
	return nil
}

// execBlock queues block l of a step of B tokens from the description;
// it has the signature of layer and layerMatMul (x, pos and seq are the
// step's, which execBuf and the attention read from the scratch).
func (e *GPUEngine) execBlock(l, B int, _ kernels.DevF32, _, _ kernels.DevI32) error {
	steps := e.m.Graph.Blocks[l]
	w := &e.w.layers[l]
	for _, g := range e.exec.plans[l] {
		if g.N == 1 {
			st := &steps[g.First]
			if err := e.op(l, st.Name, func() error { return e.execStep(st, l, B, w) }); err != nil {
				return err
			}
			continue
		}
		name := steps[g.First].Name
		for _, st := range steps[g.First+1 : g.First+g.N] {
			name += "+" + st.Name
		}
		if err := e.op(l, name, func() error { return e.execProducts(steps[g.First:g.First+g.N], g, l, B, w) }); err != nil {
			return err
		}
	}
	return nil
}

// execProducts queues a group of steps (execPlan): an optional norm, the
// products of one input in one launch, an optional residual add they
// accumulate into, gated activation they feed or column splits of their
// result; or a norm and the add of its result.
func (e *GPUEngine) execProducts(steps []model.Step, g execGroup, l, B int, w *gpuLayer) error {
	if g.NormAdd {
		n, a := &steps[0], &steps[1]
		return e.dev.RMSNormAdd(e.execBuf(n.In, B), w.vecs[n.W], e.execBuf(a.Out, B), e.m.RMSEps)
	}
	tensorCores := B >= e.matMulMin || B > gpuMaxBatch
	var norm, add, glu *model.Step
	if g.Norm {
		norm, steps = &steps[0], steps[1:]
		if tensorCores { // the tensor-core products take no norm: it runs first
			if err := e.execStep(norm, l, B, w); err != nil {
				return err
			}
			norm = nil
		}
	}
	if g.Residual {
		add, steps = &steps[len(steps)-1], steps[:len(steps)-1]
	}
	if g.GLU {
		glu, steps = &steps[len(steps)-1], steps[:len(steps)-1]
	}
	var rope *kernels.RopeEpilogue
	if g.Rope {
		// The rotation steps themselves launch nothing (execStep): where
		// the products run on the matrix-vector kernels the epilogue
		// rotates and stores, else the attention step does.
		steps = steps[:len(steps)-2]
		if !tensorCores {
			rope = e.epilogue(l)
		}
	}
	var splits []model.Step
	if g.Split > 0 {
		splits, steps = steps[len(steps)-g.Split:], steps[:len(steps)-g.Split]
	}
	segs := make([]kernels.MatVecSeg, len(steps))
	for i, st := range steps {
		segs[i] = kernels.MatVecSeg{W: w.mats[st.W], Y: e.execBuf(st.Out, B), Bias: w.vecs[st.Bias]}
	}
	if add != nil {
		segs[0].Y = e.execBuf(add.Out, B)
	}
	// after are the group's steps left to run after the products: the
	// splits whose rows could not be cut out of the matrix, the GLU on
	// the tensor-core products.
	var after []model.Step
	if splits != nil {
		if parts, ok := e.splitSegs(segs[0].W, splits, B); ok {
			segs = parts
		} else {
			after = splits
		}
	}
	gated := glu != nil && !tensorCores
	if gated && len(segs) == 1 {
		// One fused gate/up matrix: its halves, the up half into BufUp.
		f := glu.Out
		halves, ok := e.splitSegs(segs[0].W, []model.Step{{In: steps[0].Out, Out: f}, {In: steps[0].Out, Out: model.BufUp, Offset: e.m.BufWidth(f)}}, B)
		if ok {
			segs = halves
		} else {
			gated = false
		}
	}
	if glu != nil && !gated {
		after = append(after, *glu)
	}
	x := e.execBuf(steps[0].In, B)
	if tensorCores {
		if err := e.dev.MatMuls(kernels.MatMulsOp{Segs: segs, X: x, Accumulate: add != nil, Scratch: e.s.mm, ScratchBytes: e.s.mmBytes, Q16: e.useQ16(x.Rows)}); err != nil {
			return err
		}
	} else {
		op := kernels.MatVecOp{Segs: segs, X: x, Accumulate: add != nil}
		if norm != nil {
			op.X, op.Norm, op.Eps = e.execBuf(norm.In, B), w.vecs[norm.W], e.m.RMSEps
		}
		if gated {
			op.GLU, op.Act = true, gluAct(glu.Act)
			op.Segs[0].Y = e.execBuf(glu.Out, B)
		}
		if rope != nil && len(op.Segs) == 3 && add == nil {
			op.Rope = rope
		}
		if err := e.dev.MatVecFused(op); err != nil {
			return err
		}
		e.exec.stored = op.Rope != nil
	}
	for i := range after {
		if err := e.execStep(&after[i], l, B, w); err != nil {
			return err
		}
	}
	return nil
}

// splitSegs cuts the rows of w that each split step copies (its Offset,
// as many as its output's width) into a product of their own into that
// output; ok is false when a range does not start where the kernels can
// read it.
func (e *GPUEngine) splitSegs(w kernels.DevMatrix, splits []model.Step, B int) ([]kernels.MatVecSeg, bool) {
	segs := make([]kernels.MatVecSeg, len(splits))
	for i, st := range splits {
		part, err := w.SliceRows(st.Offset, e.m.BufWidth(st.Out))
		if err != nil {
			return nil, false
		}
		segs[i] = kernels.MatVecSeg{W: part, Y: e.execBuf(st.Out, B)}
	}
	return segs, true
}

// gluAct is the device activation of a described one.
func gluAct(a model.Act) kernels.GLUAct {
	if a == model.ActGELUTanh {
		return kernels.GLUGELUTanh
	}
	return kernels.GLUSiLU
}

// execStep queues one step over B rows with block l's tensors w (nil
// outside the blocks).
func (e *GPUEngine) execStep(st *model.Step, l, B int, w *gpuLayer) error {
	m, d := e.m, e.dev
	in, out := e.execBuf(st.In, B), e.execBuf(st.Out, B)
	switch st.Op {
	case model.OpNorm:
		g := w.vecs[st.W]
		rows := B * in.Cols / g.Cols
		return d.RMSNorm(kernels.DevF32{Ptr: in.Ptr, Rows: rows, Cols: g.Cols}, g, kernels.DevF32{Ptr: out.Ptr, Rows: rows, Cols: g.Cols}, m.RMSEps)
	case model.OpMatMul:
		return e.execMatMul(in, kernels.MatVecSeg{W: w.mats[st.W], Y: out, Bias: w.vecs[st.Bias]})
	case model.OpSplit:
		return d.CopyCols(in, st.Offset, out)
	case model.OpRope:
		return nil // with the attention, which stores the rotated K
	case model.OpAttention:
		return e.execAttention(st, l, B)
	case model.OpGLU:
		act := gluAct(st.Act)
		if st.In2 == model.NoBuf {
			return d.GLUFused(in, out, act)
		}
		return d.GLUPair(in, e.execBuf(st.In2, B), out, act)
	case model.OpAdd:
		return d.Add(out, in)
	case model.OpScale:
		return d.Scale(in, out, st.Scale)
	case model.OpSoftCap:
		return d.SoftCap(in, out, st.Cap)
	case model.OpMoE:
		return e.execMoE(st, w, in, out)
	}
	return fmt.Errorf("op %v: %w on the GPU", st.Op, model.ErrUnsupported)
}

// execMatMul queues the products of x (B rows) with segs: on the
// matrix-vector kernels for steps the fused path runs there, else on the
// tensor-core products.
func (e *GPUEngine) execMatMul(x kernels.DevF32, segs ...kernels.MatVecSeg) error {
	B := x.Rows
	if B >= e.matMulMin || B > gpuMaxBatch {
		return e.dev.MatMuls(kernels.MatMulsOp{Segs: segs, X: x, Scratch: e.s.mm, ScratchBytes: e.s.mmBytes, Q16: e.useQ16(x.Rows)})
	}
	return e.dev.MatVecFused(kernels.MatVecOp{Segs: segs, X: x})
}

// execAttention stores K and V (rotated, with Q, when the rope steps
// ahead ask for it) and queues the attention of Q over the cache (the
// paged f16 pool when the engine has one, else the f32 cache) into Att,
// with the step's logit scale, soft-cap and window: for a step over
// gpuMaxBatch tokens on the tensor cores where the prefill kernels take
// the head size (with the preview), else on the decode kernels in pieces
// of at most gpuMaxBatch rows (the partial results' scratch holds that
// many).
func (e *GPUEngine) execAttention(st *model.Step, l, B int) error {
	m, s, d := e.m, &e.s, e.dev
	q, k, v := s.q.Slice(0, B), s.k.Slice(0, B), s.v.Slice(0, B)
	pos, seq := kernels.DevI32{Ptr: s.pos.Ptr, Len: B}, kernels.DevI32{Ptr: s.seq.Ptr, Len: B}
	steps := e.m.Graph.Blocks[l]
	rotated, neox := false, false
	for i := range steps {
		if &steps[i] == st && i > 0 && steps[i-1].Op == model.OpRope {
			rotated, neox = true, steps[i-1].Neox
		}
	}
	var err error
	switch {
	case e.exec.stored:
		// The products stored them (execGroup.Rope).
		e.exec.stored = false
	case rotated && e.paged != nil:
		err = d.RopeStorePaged(kernels.RopeStorePagedOp{Pool: e.paged.pools[l], Q: q, K: k, V: v, Eps: m.RMSEps, Pos: pos, Seq: seq, Rope: e.ropeParams(neox)})
	case rotated:
		// LongRoPE's attention factor scales the rotated values, in the
		// rotation's launch.
		err = d.RopeStore(kernels.RopeStoreOp{Cache: e.kv[l], Q: q, K: k, V: v, Eps: m.RMSEps, Pos: pos, Seq: seq, Rope: e.ropeParams(neox)})
	case e.paged != nil:
		err = d.KVStorePaged(e.paged.pools[l], k, v, pos, seq)
	default:
		err = d.KVStore(e.kv[l], k, v, pos, seq)
	}
	if err != nil {
		return err
	}
	window := st.Window
	if window >= e.opts.Context {
		window = 0 // every position of the cache is within it
	}
	if wide(B) && e.prefill {
		// On the tensor cores over the step's prompt tiles, with the
		// architecture's scale, soft-cap and window.
		sc := kernels.PrefillScores{Scale: st.Scale, Cap: st.Cap, Window: window}
		if e.paged != nil {
			return d.AttentionPrefillPaged(kernels.AttentionPrefillPagedOp{Pool: e.paged.pools[l], Q: q, Out: s.att.Slice(0, B), Heads: m.Heads,
				Tiles: s.tiles, NumTiles: e.tiles, MaxRows: e.tileRows, Scores: sc})
		}
		return d.AttentionPrefill(kernels.AttentionPrefillOp{Cache: e.kv[l], Q: q, Out: s.att.Slice(0, B), Heads: m.Heads,
			Tiles: s.tiles, NumTiles: e.tiles, MaxRows: e.tileRows, Scores: sc})
	}
	for lo := 0; lo < B; lo += gpuMaxBatch {
		n := min(gpuMaxBatch, B-lo)
		p := kernels.DevI32{Ptr: s.pos.Ptr.Add(4 * int64(lo)), Len: n}
		sq := kernels.DevI32{Ptr: s.seq.Ptr.Add(4 * int64(lo)), Len: n}
		qs, out := s.q.Slice(lo, lo+n), s.att.Slice(lo, lo+n)
		if e.paged != nil {
			err = d.AttentionPagedArch(kernels.AttentionPagedOp{Pool: e.paged.pools[l], Q: qs, Out: out, Heads: m.Heads,
				Pos: p, Seq: sq, Scratch: s.attPart, Scale: st.Scale, Cap: st.Cap, Window: window})
		} else {
			err = d.AttentionArch(kernels.AttentionArchOp{Cache: e.kv[l], Q: qs, Out: out, Heads: m.Heads,
				Pos: p, Seq: sq, Scratch: s.attPart, Scale: st.Scale, Cap: st.Cap, Window: window})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// execMoE queues an expert mixture of in (B rows) into out, as the CPU
// engine routes (cpu_moe.go): the router's logits, then on the device the
// softmax, the st.Used most probable experts and their renormalized
// weights. A step whose tokens choose at most half the experts in all
// (2·B·Used ≤ Experts: single tokens, say) runs the chosen experts' rows
// only, each token's picks read by the products from the device; a larger
// one runs every expert over all B rows, each expert's output added with
// its weight per token (zero for the tokens that did not choose it).
// Nothing is read back, so the step replays from a graph. A step of more
// tokens than a graph holds runs grouped by expert instead unless
// GPUOptions.MoEDense is set (moeGroupedStep, execMoEGrouped).
func (e *GPUEngine) execMoE(st *model.Step, w *gpuLayer, in, out kernels.DevF32) error {
	d, s, x := e.dev, &e.s, e.exec
	B, k := in.Rows, st.Used
	probs, route := x.probs.Slice(0, B), x.route.Slice(0, B)
	if err := e.execMatMul(in, kernels.MatVecSeg{W: w.mats[st.W], Y: probs}); err != nil {
		return fmt.Errorf("ffn_gate_inp: %w", err)
	}
	act := gluAct(st.Act)
	grouped := x.groups != nil && moeGroupedStep(B, e.capturing) // a step that runs eagerly: grouped by expert
	if grouped || (2*B*k <= e.m.Experts && B*k <= s.gate.Rows) {
		// Each token's picks and their weights, for the products of the
		// chosen experts only.
		pick, pw := kernels.DevI32{Ptr: x.pick.Ptr, Len: B * k}, x.pickW.Slice(0, B)
		if err := d.MoERoute(kernels.MoERouteOp{Logits: probs, W: route, Used: k, Pick: pick, Weight: pw}); err != nil {
			return err
		}
		if grouped {
			return e.execMoEGrouped(st, w, in, out, pick, pw)
		}
		// One row per (token, pick) in the scratch of the dense path: the
		// gate and up products gated in one launch, then the down product
		// of each row's own gated values.
		gate, up, y := s.gate.Slice(0, B*k), s.up.Slice(0, B*k), x.moeY.Slice(0, B*k)
		g, u, down := w.exps[st.Experts[0]], w.exps[st.Experts[1]], w.exps[st.Experts[2]]
		if err := d.MoEProduct(kernels.MoEProductOp{W: g[0], Experts: len(g), Stride: expertStride(g), X: in, Pick: pick, Used: k, Y: gate,
			Up: u[0], UpStride: expertStride(u), Act: act, UpScratch: up}); err != nil {
			return fmt.Errorf("%s: %w", model.Spec(st.Experts[0]).Name, err)
		}
		if err := d.MoEProduct(kernels.MoEProductOp{W: down[0], Experts: len(down), Stride: expertStride(down), X: gate, Pick: pick, Used: k, PerSlot: true, Y: y}); err != nil {
			return fmt.Errorf("%s: %w", model.Spec(st.Experts[2]).Name, err)
		}
		return d.MoECombine(out, y, pw)
	}
	if err := d.MoERoute(kernels.MoERouteOp{Logits: probs, W: route, Used: k}); err != nil {
		return err
	}
	gate, up, y, acc := s.gate.Slice(0, B), s.up.Slice(0, B), x.moeY.Slice(0, B), x.moeAcc.Slice(0, B)
	g, u, down := w.exps[st.Experts[0]], w.exps[st.Experts[1]], w.exps[st.Experts[2]]
	for ex := range g {
		if err := e.execMatMul(in, kernels.MatVecSeg{W: g[ex], Y: gate}, kernels.MatVecSeg{W: u[ex], Y: up}); err != nil {
			return fmt.Errorf("ffn_gate_up_exps %d: %w", ex, err)
		}
		if err := d.GLUPair(gate, up, gate, act); err != nil {
			return err
		}
		if err := e.execMatMul(gate, kernels.MatVecSeg{W: down[ex], Y: y}); err != nil {
			return fmt.Errorf("ffn_down_exps %d: %w", ex, err)
		}
		if err := d.MoEAccum(acc, y, route, ex, ex == 0); err != nil {
			return err
		}
	}
	return d.CopyCols(acc, 0, out)
}
