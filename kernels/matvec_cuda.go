//go:build cuda

package kernels

import (
	"fmt"
	"strconv"

	"llmserve/gguf"
	"llmserve/internal/cuda"
)

// MaxBatch is the most vectors one MatVec multiplies.
const MaxBatch = 64

// matvecTypes are the weight types the matvec and embedding kernels read.
var matvecTypes = []gguf.Type{
	gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16, gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeQ4_1,
	gguf.TypeQ5_0, gguf.TypeQ5_1, gguf.TypeQ2_K, gguf.TypeQ3_K, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K,
}

// matvecTiles are the batch-column tiles compiled per type (NB in matvec.cu).
var matvecTiles = []int{1, 2, 4, 8}

// SupportsType says whether MatVec and GetRows read weights of type t.
func SupportsType(t gguf.Type) bool {
	for _, u := range matvecTypes {
		if u == t {
			return true
		}
	}
	return false
}

func matvecKernels() []string {
	var names []string
	for _, t := range matvecTypes {
		for _, nb := range matvecTiles {
			names = append(names, "matvec_"+t.String()+"_"+strconv.Itoa(nb))
		}
		names = append(names, "get_rows_"+t.String())
	}
	return names
}

// checkMatrix checks that w is a type the kernels read, with rows made of
// whole 32-value chunks, and returns its row size.
func checkMatrix(op string, w Matrix) (int64, error) {
	if !SupportsType(w.Type) {
		return 0, fmt.Errorf("kernels: %s: weight type %v not supported on CUDA", op, w.Type)
	}
	if w.Cols <= 0 || w.Rows <= 0 || w.Cols%32 != 0 {
		return 0, fmt.Errorf("kernels: %s: %v matrix %d×%d: columns must be a positive multiple of 32", op, w.Type, w.Rows, w.Cols)
	}
	rb, err := w.RowBytes()
	if err != nil {
		return 0, fmt.Errorf("kernels: %s: %w", op, err)
	}
	return rb, nil
}

// MatVec computes y[b, :] = W · x[b, :] for the x.Rows ≤ MaxBatch vectors
// of x; x is B × W.Cols, y is B × W.Rows.
func (d *Device) MatVec(w Matrix, x, y F32) error {
	rb, err := checkMatrix("matvec", w)
	if err != nil {
		return err
	}
	if x.Cols != w.Cols || y.Cols != w.Rows || x.Rows != y.Rows || x.Rows < 1 || x.Rows > MaxBatch {
		return fmt.Errorf("kernels: matvec: W %d×%d, x %d×%d, y %d×%d: want x B×%d, y B×%d, 1 ≤ B ≤ %d",
			w.Rows, w.Cols, x.Rows, x.Cols, y.Rows, y.Cols, w.Cols, w.Rows, MaxBatch)
	}
	b := x.Rows
	nb := 8
	switch {
	case b == 1:
		nb = 1
	case b == 2:
		nb = 2
	case b <= 4:
		nb = 4
	}
	name := "matvec_" + w.Type.String() + "_" + strconv.Itoa(nb)
	return d.launch(name, cuda.Dim3{X: ceilDiv(w.Rows, 4), Y: ceilDiv(b, nb)}, cuda.Dim3{X: 128}, 0,
		cuda.P(w.Ptr), cuda.P(x.Ptr), cuda.P(y.Ptr), cuda.I(w.Rows), cuda.I(w.Cols), cuda.Arg(rb), cuda.I(b))
}

// GetRows writes row ids[b] of W, dequantized, to out[b, :] (an embedding
// lookup); ids outside [0, W.Rows) give zero rows.
func (d *Device) GetRows(w Matrix, ids I32, out F32) error {
	rb, err := checkMatrix("get_rows", w)
	if err != nil {
		return err
	}
	if out.Cols != w.Cols || out.Rows != ids.Len || ids.Len < 1 {
		return fmt.Errorf("kernels: get_rows: W %d×%d, %d ids, out %d×%d: want out %d×%d",
			w.Rows, w.Cols, ids.Len, out.Rows, out.Cols, ids.Len, w.Cols)
	}
	chunks := w.Cols / 32
	return d.launch("get_rows_"+w.Type.String(), cuda.Dim3{X: ceilDiv(chunks, 128), Y: ids.Len}, cuda.Dim3{X: 128}, 0,
		cuda.P(w.Ptr), cuda.P(ids.Ptr), cuda.P(out.Ptr), cuda.I(w.Cols), cuda.Arg(rb), cuda.I(w.Rows))
}
