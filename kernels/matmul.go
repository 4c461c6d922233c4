package kernels

import "fmt"

// rowTile is the number of weight rows a prefill pass keeps hot in cache
// while it runs every activation row over them.
const rowTile = 16

// MatMul computes y[i*w.Rows + r] = Σ_c W[r,c]·x[i*w.Cols + c] for i < n:
// n = 1 is the matrix-vector product of a decode step, n > 1 a prefill.
// For quantized types the activations are quantized to 8 bits once per call
// (see act.go), so results differ from an exact product by that rounding.
// y must not overlap x. MatMul does not allocate once the pool's buffers
// have grown to the largest activation size seen.
func MatMul(p *Pool, w Matrix, x []float32, n int, y []float32) error {
	return matMul(bestKernels(), p, w, x, n, y)
}

// matMulJob is the state of one MatMul shared with the pool's threads. Its
// two loop bodies are bound once, so running them allocates nothing.
type matMulJob struct {
	buf  actBuf   // quantized activations, grown as needed
	acts []actRow // [n] activation rows of this call
	ks   *kernelSet
	k    typeKernel
	data []byte    // weights
	rb   int       // bytes per weight row
	rows int       // weight rows
	y    []float32 // [n*rows] output

	quantizeFn, rowsFn func(lo, hi int)
}

func (j *matMulJob) init() {
	j.quantizeFn = j.quantize
	j.rowsFn = j.run
}

// quantize prepares activation rows [lo, hi).
func (j *matMulJob) quantize(lo, hi int) {
	for i := lo; i < hi; i++ {
		j.ks.quantize(&j.acts[i], j.k.act)
	}
}

// run computes weight rows [lo, hi) for every activation row, a tile of
// rowTile weight rows at a time so the tile stays in cache across them.
// Where the type has a four-row kernel, activation rows go four at a time
// through each weight row. A single activation row (decode) goes through
// runStreams instead.
func (j *matMulJob) run(lo, hi int) {
	if len(j.acts) == 1 {
		j.runStreams(lo, hi)
		return
	}
	dot, dot4, data, rb, rows := j.k.dot, j.k.dot4, j.data, j.rb, j.rows
	for t := lo; t < hi; t += rowTile {
		te := min(t+rowTile, hi)
		i := 0
		if dot4 != nil {
			for ; i+4 <= len(j.acts); i += 4 {
				a := j.acts[i : i+4]
				for r := t; r < te; r++ {
					for k, v := range dot4(data[r*rb:(r+1)*rb], a) {
						j.y[(i+k)*rows+r] = v
					}
				}
			}
		}
		for ; i < len(j.acts); i++ {
			a := &j.acts[i]
			yi := j.y[i*rows : (i+1)*rows]
			for r := t; r < te; r++ {
				yi[r] = dot(data[r*rb:(r+1)*rb], a)
			}
		}
	}
}

// runStreams computes weight rows [lo, hi) for the one activation row,
// taking rows alternately from the two halves of the range. Decode streams
// the weights from memory, and two streams per thread keep more of them in
// flight than one: each half's prefetches lead by twice the time. On the
// weights of a Llama-3.2-1B Q4_K_M file, two threads, a decode step's
// matrix products took 3-5% less time than row by row (Q8_0: no
// different); four streams were no better than two.
func (j *matMulJob) runStreams(lo, hi int) {
	dot, data, rb, a, y := j.k.dot, j.data, j.rb, &j.acts[0], j.y
	h := (hi - lo) / 2
	for r := lo; r < lo+h; r++ {
		s := r + h
		y[r] = dot(data[r*rb:(r+1)*rb], a)
		y[s] = dot(data[s*rb:(s+1)*rb], a)
	}
	if r := lo + 2*h; r < hi {
		y[r] = dot(data[r*rb:(r+1)*rb], a)
	}
}

func matMul(ks *kernelSet, p *Pool, w Matrix, x []float32, n int, y []float32) error {
	rb, err := w.check()
	if err != nil {
		return err
	}
	k, ok := ks.types[w.Type]
	if !ok {
		return fmt.Errorf("kernels: MatMul: matrix type %s is not supported", w.Type)
	}
	if n < 0 || len(x) < n*w.Cols || len(y) < n*w.Rows {
		return fmt.Errorf("kernels: MatMul %s %dx%d: n=%d with len(x)=%d, len(y)=%d", w.Type, w.Rows, w.Cols, n, len(x), len(y))
	}
	if n == 0 || w.Rows == 0 {
		return nil
	}
	p.mmMu.Lock()
	defer p.mmMu.Unlock()
	j := &p.mm
	j.acts = j.buf.prepare(k.act, x, n, w.Cols)
	j.ks, j.k, j.data, j.rb, j.rows, j.y = ks, k, w.Data, rb, w.Rows, y
	if k.act != actF32 {
		p.ForChunk(n, 1, j.quantizeFn)
	}
	p.ForChunk(w.Rows, max(rowTile, w.Rows/(16*p.threads)), j.rowsFn)
	j.acts, j.ks, j.data, j.y = nil, nil, nil, nil
	return nil
}
