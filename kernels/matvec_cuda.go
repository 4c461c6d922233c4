//go:build cuda

package kernels

import (
	"fmt"
	"strconv"
	"strings"

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

// matvecWarps is MV_WARPS in matvec.cu: rows per block, one per warp.
const matvecWarps = 8

// rowsPerWarp is MV_ROWS(NB) in matvec.cu for the chunked kernels; the
// value-by-value ones take one row per warp.
func rowsPerWarp(kernel string, nb int) int {
	if nb >= 4 && !strings.Contains(kernel, "_elem_") {
		return 2
	}
	return 1
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
		if isFloatType(t) {
			for _, nb := range matvecTiles {
				names = append(names, "matvec_elem_"+t.String()+"_"+strconv.Itoa(nb))
			}
			names = append(names, "get_rows_elem_"+t.String())
		}
	}
	return names
}

func isFloatType(t gguf.Type) bool {
	return t == gguf.TypeF32 || t == gguf.TypeF16 || t == gguf.TypeBF16
}

// checkMatrix checks that w is a type the kernels read and returns its row
// size, and the kernel name prefix: quantized rows are read in 32-value
// chunks with 16-byte loads where the layout allows; float rows whose length
// is not a multiple of 32 are read value by value ("_elem").
func checkMatrix(op string, w DevMatrix) (int64, string, error) {
	if !SupportsType(w.Type) {
		return 0, "", fmt.Errorf("kernels: %s: weight type %v not supported on CUDA", op, w.Type)
	}
	if w.Cols <= 0 || w.Rows <= 0 || (w.Cols%32 != 0 && !isFloatType(w.Type)) {
		return 0, "", fmt.Errorf("kernels: %s: %v matrix %d×%d: columns must be a positive multiple of 32", op, w.Type, w.Rows, w.Cols)
	}
	rb, err := w.RowBytes()
	if err != nil {
		return 0, "", fmt.Errorf("kernels: %s: %w", op, err)
	}
	if w.Cols%32 != 0 {
		return rb, op + "_elem_" + w.Type.String(), nil
	}
	return rb, op + "_" + w.Type.String(), nil
}

// MatVec computes y[b, :] = W · x[b, :] for the x.Rows ≤ MaxBatch vectors
// of x; x is B × W.Cols, y is B × W.Rows.
func (d *Device) MatVec(w DevMatrix, x, y DevF32) error {
	rb, kernel, err := checkMatrix("matvec", w)
	if err != nil {
		return err
	}
	if x.Cols != w.Cols || y.Cols != w.Rows || x.Rows != y.Rows || x.Rows < 1 || x.Rows > MaxBatch {
		return fmt.Errorf("kernels: matvec: W %d×%d, x %d×%d, y %d×%d: want x B×%d, y B×%d, 1 ≤ B ≤ %d",
			w.Rows, w.Cols, x.Rows, x.Cols, y.Rows, y.Cols, w.Cols, w.Rows, MaxBatch)
	}
	if ceilDiv(w.Rows, matvecWarps) > 65535 {
		return fmt.Errorf("kernels: matvec: %d rows: at most %d", w.Rows, 65535*matvecWarps)
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
	return d.launch(kernel+"_"+strconv.Itoa(nb), cuda.Dim3{X: ceilDiv(b, nb), Y: ceilDiv(w.Rows, matvecWarps*rowsPerWarp(kernel, nb))}, cuda.Dim3{X: 32 * matvecWarps}, 0,
		cuda.P(w.Ptr), cuda.P(x.Ptr), cuda.P(y.Ptr), cuda.I(w.Rows), cuda.I(w.Cols), cuda.Arg(rb), cuda.I(b))
}

// GetRows writes row ids[b] of W, dequantized, to out[b, :] (an embedding
// lookup); ids outside [0, W.Rows) give zero rows.
func (d *Device) GetRows(w DevMatrix, ids DevI32, out DevF32) error {
	rb, kernel, err := checkMatrix("get_rows", w)
	if err != nil {
		return err
	}
	if out.Cols != w.Cols || out.Rows != ids.Len || ids.Len < 1 {
		return fmt.Errorf("kernels: get_rows: W %d×%d, %d ids, out %d×%d: want out %d×%d",
			w.Rows, w.Cols, ids.Len, out.Rows, out.Cols, ids.Len, w.Cols)
	}
	threads := w.Cols / 32 // one per chunk
	if w.Cols%32 != 0 {
		threads = w.Cols // one per value
	}
	return d.launch(kernel, cuda.Dim3{X: ceilDiv(threads, 128), Y: ids.Len}, cuda.Dim3{X: 128}, 0,
		cuda.P(w.Ptr), cuda.P(ids.Ptr), cuda.P(out.Ptr), cuda.I(w.Cols), cuda.Arg(rb), cuda.I(w.Rows))
}
