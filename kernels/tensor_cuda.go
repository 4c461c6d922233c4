//go:build cuda

package kernels

import (
	"fmt"

	"llmserve/gguf"
	"llmserve/internal/cuda"
)

// F32 is a row-major device array of Rows × Cols float32 values at Ptr.
type F32 struct {
	Ptr        cuda.DevPtr
	Rows, Cols int
}

// Len is the number of values.
func (t F32) Len() int { return t.Rows * t.Cols }

// Row is row r of t as a 1 × Cols array.
func (t F32) Row(r int) F32 { return F32{t.Ptr.Add(int64(r) * int64(t.Cols) * 4), 1, t.Cols} }

// Slice is rows [r0, r1) of t.
func (t F32) Slice(r0, r1 int) F32 {
	return F32{t.Ptr.Add(int64(r0) * int64(t.Cols) * 4), r1 - r0, t.Cols}
}

// I32 is a device array of Len int32 values at Ptr.
type I32 struct {
	Ptr cuda.DevPtr
	Len int
}

// Matrix is a weight matrix on the device in its GGUF storage type: Rows
// rows of Cols values, each row RowBytes bytes, Rows*RowBytes bytes at Ptr.
type Matrix struct {
	Type       gguf.Type
	Rows, Cols int
	Ptr        cuda.DevPtr
}

// RowBytes is the stored size of one row.
func (m Matrix) RowBytes() (int64, error) { return m.Type.RowBytes(int64(m.Cols)) }

// F32Buffer views a whole buffer as a rows × cols f32 array, checking the
// size.
func F32Buffer(b *cuda.Buffer, rows, cols int) (F32, error) {
	if int64(rows)*int64(cols)*4 > b.Size() {
		return F32{}, fmt.Errorf("kernels: %d×%d f32 do not fit a buffer of %d bytes", rows, cols, b.Size())
	}
	return F32{b.Ptr(), rows, cols}, nil
}

// I32Buffer views a buffer as n int32 values, checking the size.
func I32Buffer(b *cuda.Buffer, n int) (I32, error) {
	if int64(n)*4 > b.Size() {
		return I32{}, fmt.Errorf("kernels: %d int32 do not fit a buffer of %d bytes", n, b.Size())
	}
	return I32{b.Ptr(), n}, nil
}
