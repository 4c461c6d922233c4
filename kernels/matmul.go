package kernels

import "fmt"

// rowTile is the number of weight rows a prefill pass keeps hot in cache
// while it runs every activation row over them.
const rowTile = 16

// MatMul computes y[i*w.Rows + r] = Σ_c W[r,c]·x[i*w.Cols + c] for i < n:
// n = 1 is the matrix-vector product of a decode step, n > 1 a prefill.
// For quantized types the activations are quantized to 8 bits once per call
// (see act.go), so results differ from an exact product by that rounding.
func MatMul(p *Pool, w Matrix, x []float32, n int, y []float32) error {
	return matMul(bestKernels(), p, w, x, n, y)
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
	p.scratchMu.Lock()
	defer p.scratchMu.Unlock()
	acts := p.scratch.prepare(k.act, x, n, w.Cols)
	if k.act != actF32 {
		p.ForChunk(n, 1, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				acts[i].quantize(k.act)
			}
		})
	}
	rows, dot, data := w.Rows, k.dot, w.Data
	chunk := max(rowTile, rows/(16*p.threads))
	p.ForChunk(rows, chunk, func(lo, hi int) {
		for t := lo; t < hi; t += rowTile {
			te := min(t+rowTile, hi)
			for i := range acts {
				a := &acts[i]
				yi := y[i*rows : (i+1)*rows]
				for r := t; r < te; r++ {
					yi[r] = dot(data[r*rb:(r+1)*rb], a)
				}
			}
		}
	})
	return nil
}
