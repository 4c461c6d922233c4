//go:build cuda

package decode

import (
	"fmt"

	"llmserve/internal/cuda"
	"llmserve/kernels"
	"llmserve/model"
)

// gpuWeights are the model's tensors on the device: matrices as stored in
// the file (Q6_K and Q8_0 products in the kernels' wide layout), norms and
// biases decoded to f32.
type gpuWeights struct {
	tokEmbd, output kernels.DevMatrix
	outputNorm      kernels.DevF32 // 1 × Embd
	ropeFactors     kernels.DevF32 // 1 × RopeDim/2, or zero Ptr
	layers          []gpuLayer
}

// gpuLayer holds one block's tensors by model.TensorID: matrices in mats,
// vectors (norms 1 × width, biases) decoded to f32 in vecs; absent ones
// have Cols == 0 and a zero Ptr. A 3-D tensor ([experts][rows][cols]) is
// placed one matrix per expert, each 256-byte aligned and all the same
// distance apart (expertStride), in exps; its mats entry stays absent.
type gpuLayer struct {
	mats [model.NumTensors]kernels.DevMatrix
	vecs [model.NumTensors]kernels.DevF32
	exps [model.NumTensors][]kernels.DevMatrix // [expert], for 3-D tensors only
}

// expertStride is the distance in bytes from one expert's matrix to the
// next (0 for a single expert).
func expertStride(exps []kernels.DevMatrix) int64 {
	if len(exps) < 2 {
		return 0
	}
	return int64(exps[1].Ptr - exps[0].Ptr)
}

// weightArena packs every tensor into one device allocation.
type weightArena struct {
	off   int64                               // next free byte
	mats  map[*model.Tensor]kernels.DevMatrix // tensors already placed, so a tied output is stored once
	parts []arenaPart                         // in placement order
	at    []int64                             // byte offset of each part
}

// arenaPart is one tensor's host bytes; a wide matrix is converted to the
// wide layout as it is written, so only one converted copy exists at a
// time.
type arenaPart struct {
	data []byte
	wide *kernels.DevMatrix // the matrix, when it is stored wide
}

// bytes is the part as it is written to the device.
func (p arenaPart) bytes() ([]byte, error) {
	if p.wide == nil {
		return p.data, nil
	}
	return kernels.Widen(p.wide.Type, p.data, p.wide.Rows, p.wide.Cols)
}

// A vector (norm, bias, rope factors) with Cols == 0 is absent and keeps a
// zero pointer.

const arenaAlign = 256

// weightSlack is extra device memory after the last tensor: the 8-bit
// kernels may read a 4-byte word past the end of a row.
const weightSlack = 256

// place reserves size bytes for p.
func (a *weightArena) place(p arenaPart, size int64) cuda.DevPtr {
	off := a.off
	a.parts = append(a.parts, p)
	a.at = append(a.at, off)
	a.off += (size + arenaAlign - 1) / arenaAlign * arenaAlign
	return cuda.DevPtr(off) // relative until the arena is allocated
}

// placeBytes reserves room for data as it is.
func (a *weightArena) placeBytes(data []byte) cuda.DevPtr {
	return a.place(arenaPart{data: data}, int64(len(data)))
}

// uploadWeights places every tensor of m in one device buffer, after
// checking that the device has room for it and reserve more bytes. The
// rope frequency factors are those of an engine of context positions
// (LongRoPE's long factors beyond the original context, as the CPU engine
// picks them).
func uploadWeights(ctx *cuda.Context, m *model.Model, context int, reserve int64, progress Progress) (gpuWeights, *cuda.Buffer, error) {
	a := &weightArena{mats: map[*model.Tensor]kernels.DevMatrix{}}
	var w gpuWeights
	var err error
	// mat places a matrix; product says that only products read it (not
	// the embedding lookup), so it may be stored wide.
	mat := func(t *model.Tensor, product bool) kernels.DevMatrix {
		if err != nil {
			return kernels.DevMatrix{}
		}
		if mx, ok := a.mats[t]; ok {
			return mx
		}
		if !kernels.SupportsType(t.Type) {
			err = fmt.Errorf("tensor %q: type %v: %w on CUDA", t.Name, t.Type, model.ErrUnsupported)
			return kernels.DevMatrix{}
		}
		mx := kernels.DevMatrix{Type: t.Type, Rows: t.Rows(), Cols: int(t.Dims[0])}
		if product && kernels.StoresWide(mx.Type, mx.Rows, mx.Cols) {
			mx.Wide = true
			rb, _ := mx.RowBytes()
			mx.Ptr = a.place(arenaPart{data: t.Data, wide: &mx}, int64(mx.Rows)*rb)
		} else {
			mx.Ptr = a.placeBytes(t.Data)
		}
		a.mats[t] = mx
		return mx
	}
	// experts places the matrices of a 3-D tensor one by one, in the
	// GGUF layout (the products of the chosen experts only,
	// kernels.MoEProduct, read that); consecutive placements of one size
	// are equally spaced.
	experts := func(t *model.Tensor) []kernels.DevMatrix {
		if err != nil {
			return nil
		}
		if !kernels.SupportsType(t.Type) {
			err = fmt.Errorf("tensor %q: type %v: %w on CUDA", t.Name, t.Type, model.ErrUnsupported)
			return nil
		}
		n, rows, cols := int(t.Dims[2]), int(t.Dims[1]), int(t.Dims[0])
		rb, rerr := t.Type.RowBytes(int64(cols))
		if rerr != nil || int64(len(t.Data)) != int64(n)*int64(rows)*rb {
			err = fmt.Errorf("tensor %q: %d bytes for %d experts of %d×%d %v", t.Name, len(t.Data), n, rows, cols, t.Type)
			return nil
		}
		size := int64(rows) * rb
		views := make([]kernels.DevMatrix, n)
		for e := range views {
			views[e] = kernels.DevMatrix{Type: t.Type, Rows: rows, Cols: cols, Ptr: a.placeBytes(t.Data[int64(e)*size : int64(e+1)*size])}
		}
		return views
	}
	vec := func(t *model.Tensor) kernels.DevF32 {
		if err != nil || t == nil {
			return kernels.DevF32{}
		}
		var v []float32
		if v, err = f32s(t); err != nil {
			return kernels.DevF32{}
		}
		return kernels.DevF32{Ptr: a.placeBytes(cuda.AsBytes(v)), Rows: 1, Cols: len(v)}
	}
	w.tokEmbd = mat(m.Tensors[model.TokEmbd], false) // first, so that a tied output is read as stored
	w.output = mat(m.Tensors[model.Output], true)
	w.outputNorm = vec(m.Tensors[model.OutputNorm])
	w.layers = make([]gpuLayer, len(m.Layers))
	for i := range m.Layers {
		for id, t := range m.Layers[i] {
			switch {
			case t == nil:
			case model.Spec(model.TensorID(id)).Kind == model.KindMatrix && len(t.Dims) == 3:
				w.layers[i].exps[id] = experts(t)
			case model.Spec(model.TensorID(id)).Kind == model.KindMatrix:
				w.layers[i].mats[id] = mat(t, true)
			default:
				w.layers[i].vecs[id] = vec(t)
			}
		}
	}
	if err == nil {
		var ff []float32
		if ff, err = ropeFactors(m, context); err == nil && ff != nil {
			w.ropeFactors = kernels.DevF32{Ptr: a.placeBytes(cuda.AsBytes(ff)), Rows: 1, Cols: len(ff)}
		}
	}
	if err != nil {
		return gpuWeights{}, nil, err
	}
	free, total, err := ctx.MemInfo()
	if err != nil {
		return gpuWeights{}, nil, err
	}
	need, err := sizeSum("weights, KV cache and buffers", a.off, weightSlack, reserve)
	if err != nil {
		return gpuWeights{}, nil, err
	}
	if need > free {
		return gpuWeights{}, nil, fmt.Errorf("not enough device memory: the model needs %d bytes (%s: weights %s, KV cache and buffers %s), %d bytes (%s) of %s are free; lower the context (-c) or slots (-np): %w",
			need, gib(need), gib(a.off), gib(reserve), free, gib(free), gib(total), errTooLarge)
	}
	buf, err := ctx.Alloc("weights", a.off+weightSlack)
	if err != nil {
		return gpuWeights{}, nil, err
	}
	for i, part := range a.parts {
		p, err := part.bytes()
		if err == nil {
			err = buf.Write(a.at[i], p)
		}
		if err != nil {
			buf.Free()
			return gpuWeights{}, nil, err
		}
		if progress != nil {
			progress(min(a.at[i]+int64(len(p)), a.off), a.off)
		}
	}
	if progress != nil {
		progress(a.off, a.off)
	}
	// Placed pointers are offsets into the arena until now.
	base := buf.Ptr()
	rel := func(p cuda.DevPtr, present bool) cuda.DevPtr {
		if !present {
			return 0
		}
		return base + p
	}
	w.tokEmbd.Ptr = rel(w.tokEmbd.Ptr, true)
	w.output.Ptr = rel(w.output.Ptr, true)
	w.outputNorm.Ptr = rel(w.outputNorm.Ptr, true)
	w.ropeFactors.Ptr = rel(w.ropeFactors.Ptr, w.ropeFactors.Cols > 0)
	for i := range w.layers {
		l := &w.layers[i]
		for id := range l.mats {
			l.mats[id].Ptr = rel(l.mats[id].Ptr, l.mats[id].Cols > 0)
			l.vecs[id].Ptr = rel(l.vecs[id].Ptr, l.vecs[id].Cols > 0)
			for e := range l.exps[id] {
				l.exps[id][e].Ptr = rel(l.exps[id][e].Ptr, true)
			}
		}
	}
	return w, buf, nil
}
