package decode

import (
	"fmt"

	"llmserve/kernels"
	"llmserve/model"
)

// step runs a chunk of at most MaxBatch tokens through the model's pass
// and returns the number of logit rows it wrote.
func (e *CPUEngine) step(b *Batch, out []float32) (int, error) {
	m, s, n := e.m, &e.s, b.Len()
	embd := m.Embd
	x := s.bufs[model.BufX]
	for i, tok := range b.Tokens {
		if err := kernels.Row(e.w.global[model.TokEmbd].mat, int(tok), x[i*embd:(i+1)*embd]); err != nil {
			return 0, fmt.Errorf("decode: token_embd: %w", err)
		}
	}
	e.dumpRows("inp_embd", x, embd, n, b, nil)
	if err := e.run(m.Graph.Input, -1, &e.w.global, n, b, nil, out); err != nil {
		return 0, fmt.Errorf("decode: %w", err)
	}
	for l := range e.w.layers {
		if err := e.run(m.Graph.Blocks[l], l, &e.w.layers[l], n, b, nil, out); err != nil {
			return 0, fmt.Errorf("decode: blk.%d: %w", l, err)
		}
	}
	rows := 0
	for i := 0; i < n; i++ {
		if b.Logits[i] {
			copy(s.bufs[model.BufRows][rows*embd:(rows+1)*embd], x[i*embd:(i+1)*embd])
			s.rowTok[rows] = i
			rows++
		}
	}
	if rows == 0 {
		return 0, nil
	}
	if err := e.run(m.Graph.Output, -1, &e.w.global, rows, b, s.rowTok[:rows], out); err != nil {
		return 0, fmt.Errorf("decode: %w", err)
	}
	return rows, nil
}

// run executes steps over n rows with the tensors ws of block layer (-1:
// outside the blocks). rowTok maps rows to tokens of b for the output
// steps (nil: row i is token i).
func (e *CPUEngine) run(steps []model.Step, layer int, ws *cpuTensors, n int, b *Batch, rowTok []int, out []float32) error {
	for i := range steps {
		st := &steps[i]
		if err := e.exec(st, layer, ws, n, b, out); err != nil {
			return fmt.Errorf("%s: %w", st.Name, err)
		}
		if e.dump != nil {
			name := st.Name
			if layer >= 0 {
				name = fmt.Sprintf("blk.%d.%s", layer, st.Name)
			}
			y, w := e.buf(st.Out, n, out)
			e.dumpRows(name, y, w, n, b, rowTok)
		}
	}
	return nil
}

// buf returns the first n rows of buffer id (the caller's logits for
// BufLogits) and the width of a row.
func (e *CPUEngine) buf(id model.Buf, n int, out []float32) ([]float32, int) {
	w := e.m.BufWidth(id)
	if id == model.BufLogits {
		return out[:n*w], w
	}
	return e.s.bufs[id][:n*w], w
}

// exec runs one step.
func (e *CPUEngine) exec(st *model.Step, layer int, ws *cpuTensors, n int, b *Batch, out []float32) error {
	m := e.m
	x, wx := e.buf(st.In, n, out)
	y, wy := e.buf(st.Out, n, out)
	switch st.Op {
	case model.OpNorm:
		g := ws[st.W].vec
		for i := 0; i < n*wx; i += len(g) {
			kernels.RMSNorm(y[i:i+len(g)], x[i:i+len(g)], g, m.RMSEps)
		}
	case model.OpMatMul:
		if err := kernels.MatMul(e.pool, ws[st.W].mat, x, n, y); err != nil {
			return err
		}
		if st.Bias != model.NoTensor {
			bias := ws[st.Bias].vec
			for i := 0; i < n; i++ {
				kernels.Add(y[i*wy:(i+1)*wy], bias)
			}
		}
	case model.OpSplit:
		for i := 0; i < n; i++ {
			copy(y[i*wy:(i+1)*wy], x[i*wx+st.Offset:i*wx+st.Offset+wy])
		}
	case model.OpRope:
		for i := 0; i < n; i++ {
			e.rope(y[i*wy:(i+1)*wy], b.Pos[i], st.Neox)
		}
	case model.OpAttention:
		e.storeKV(layer, n, b)
		e.attention(layer, st, b)
	case model.OpGLU:
		if st.In2 == model.NoBuf {
			f := wx / 2
			for i := 0; i < n; i++ {
				glu(st.Act, y[i*wy:(i+1)*wy], x[i*wx:i*wx+f], x[i*wx+f:(i+1)*wx])
			}
		} else {
			up, _ := e.buf(st.In2, n, out)
			glu(st.Act, y, x, up)
		}
	case model.OpAdd:
		kernels.Add(y, x)
	case model.OpScale:
		kernels.Scale(y, st.Scale)
	case model.OpSoftCap:
		kernels.SoftCap(y, st.Cap)
	case model.OpMoE:
		return e.moe(st, ws, x, y, n)
	default:
		return fmt.Errorf("op %v: %w on the CPU", st.Op, model.ErrUnsupported)
	}
	return nil
}

// glu writes act(gate)·up to dst.
func glu(act model.Act, dst, gate, up []float32) {
	if act == model.ActGELUTanh {
		kernels.GeGLU(dst, gate, up)
		return
	}
	kernels.SwiGLU(dst, gate, up)
}

// rope rotates the heads of one token at position pos, scaling the rotated
// values by the LongRoPE attention factor when there is one.
func (e *CPUEngine) rope(x []float32, pos int32, neox bool) {
	m := e.m
	heads := len(x) / m.HeadDim
	kernels.RoPE(x, heads, m.HeadDim, m.RopeDim, int(pos), m.RopeBase, neox, e.ropeFreqs)
	if f := m.RopeAttnFactor; f != 1 {
		for h := 0; h < heads; h++ {
			kernels.Scale(x[h*m.HeadDim:h*m.HeadDim+m.RopeDim], f)
		}
	}
}
