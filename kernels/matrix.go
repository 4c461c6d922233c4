package kernels

import (
	"fmt"

	"llmserve/gguf"
)

// Matrix is a row-major weight matrix in one of ggml's types: row r holds
// Cols values of Type in Data[r*RowBytes : (r+1)*RowBytes]. Data is normally
// a slice of a memory-mapped GGUF file and is never copied.
type Matrix struct {
	Type gguf.Type
	Rows int
	Cols int
	Data []byte // [Rows * RowBytes(Cols)]
}

// NewMatrix checks that data holds exactly rows rows of cols values of type
// t and that MatMul supports t.
func NewMatrix(t gguf.Type, rows, cols int, data []byte) (Matrix, error) {
	if rows < 0 || cols <= 0 {
		return Matrix{}, fmt.Errorf("kernels: bad %s matrix shape %dx%d", t, rows, cols)
	}
	if _, ok := portableKernels().types[t]; !ok {
		return Matrix{}, fmt.Errorf("kernels: matrix type %s is not supported", t)
	}
	rb, err := t.RowBytes(int64(cols))
	if err != nil {
		return Matrix{}, fmt.Errorf("kernels: %s matrix %dx%d: %w", t, rows, cols, err)
	}
	if want := int64(rows) * rb; int64(len(data)) != want {
		return Matrix{}, fmt.Errorf("kernels: %s matrix %dx%d needs %d bytes, got %d", t, rows, cols, want, len(data))
	}
	return Matrix{Type: t, Rows: rows, Cols: cols, Data: data}, nil
}

// rowBytes is the size of one row in bytes.
func (m *Matrix) rowBytes() int { return m.Cols / m.Type.BlockSize() * m.Type.TypeSize() }

// check verifies that the matrix is consistent (it may have been built
// without NewMatrix) and returns its row size in bytes.
func (m *Matrix) check() (int, error) {
	bs := m.Type.BlockSize()
	if bs == 0 || m.Rows < 0 || m.Cols <= 0 || m.Cols%bs != 0 {
		return 0, fmt.Errorf("kernels: bad %s matrix shape %dx%d", m.Type, m.Rows, m.Cols)
	}
	rb := m.rowBytes()
	if len(m.Data) != m.Rows*rb {
		return 0, fmt.Errorf("kernels: %s matrix %dx%d needs %d bytes, has %d", m.Type, m.Rows, m.Cols, m.Rows*rb, len(m.Data))
	}
	return rb, nil
}

// Row dequantizes row r of w into dst[:w.Cols] (an embedding lookup).
func Row(w Matrix, r int, dst []float32) error {
	rb, err := w.check()
	if err != nil {
		return err
	}
	if r < 0 || r >= w.Rows {
		return fmt.Errorf("kernels: row %d out of range [0,%d)", r, w.Rows)
	}
	if len(dst) < w.Cols {
		return fmt.Errorf("kernels: row of %d values into %d", w.Cols, len(dst))
	}
	if err := gguf.Dequantize(w.Type, w.Data[r*rb:(r+1)*rb], dst[:w.Cols]); err != nil {
		return fmt.Errorf("kernels: row %d: %w", r, err)
	}
	return nil
}
