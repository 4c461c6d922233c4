//go:build cuda

package kernels

import (
	"fmt"

	"llmserve/gguf"
	"llmserve/internal/cuda"
)

// DevF32 is a row-major device array of Rows × Cols float32 values at Ptr.
type DevF32 struct {
	Ptr        cuda.DevPtr
	Rows, Cols int
}

// Len is the number of values.
func (t DevF32) Len() int { return t.Rows * t.Cols }

// Row is row r of t as a 1 × Cols array.
func (t DevF32) Row(r int) DevF32 { return DevF32{t.Ptr.Add(int64(r) * int64(t.Cols) * 4), 1, t.Cols} }

// Slice is rows [r0, r1) of t.
func (t DevF32) Slice(r0, r1 int) DevF32 {
	return DevF32{t.Ptr.Add(int64(r0) * int64(t.Cols) * 4), r1 - r0, t.Cols}
}

// DevI32 is a device array of Len int32 values at Ptr.
type DevI32 struct {
	Ptr cuda.DevPtr
	Len int
}

// DevMatrix is a weight matrix on the device in its GGUF storage type: Rows
// rows of Cols values, each row RowBytes bytes, Rows*RowBytes bytes at Ptr.
type DevMatrix struct {
	Type       gguf.Type
	Rows, Cols int
	Ptr        cuda.DevPtr
	Wide       bool // stored in the wide layout (Widen), which only the 8-bit products read
}

// RowBytes is the stored size of one row.
func (m DevMatrix) RowBytes() (int64, error) {
	if m.Wide {
		return WideRowBytes(m.Type, m.Cols)
	}
	return m.Type.RowBytes(int64(m.Cols))
}

// SliceRows is rows [lo, lo+n) of m as a matrix of its own (a part of a
// fused product), or an error when they are out of range or do not start
// at a 16-byte aligned address, as the kernels' vector loads need.
func (m DevMatrix) SliceRows(lo, n int) (DevMatrix, error) {
	rb, err := m.RowBytes()
	if err != nil {
		return DevMatrix{}, err
	}
	off := int64(lo) * rb
	if lo < 0 || n < 1 || lo+n > m.Rows || (uint64(m.Ptr)+uint64(off))%16 != 0 {
		return DevMatrix{}, fmt.Errorf("kernels: rows %d..%d of a %v matrix of %d rows (%d bytes each) at %#x", lo, lo+n, m.Type, m.Rows, rb, uint64(m.Ptr))
	}
	s := m
	s.Rows, s.Ptr = n, m.Ptr.Add(off)
	return s, nil
}

// typeCode is the matrix's type as the kernels name it (T_* in quant.cuh,
// plus T_WIDE in mvq.cu for the wide layout).
func (m DevMatrix) typeCode() int {
	if m.Wide {
		return int(m.Type) + typeWide
	}
	return int(m.Type)
}

// typeWide is T_WIDE in mvq.cu.
const typeWide = 256

// DevF32Buffer views a whole buffer as a rows × cols f32 array, checking the
// size.
func DevF32Buffer(b *cuda.Buffer, rows, cols int) (DevF32, error) {
	if int64(rows)*int64(cols)*4 > b.Size() {
		return DevF32{}, fmt.Errorf("kernels: %d×%d f32 do not fit a buffer of %d bytes", rows, cols, b.Size())
	}
	return DevF32{b.Ptr(), rows, cols}, nil
}

// DevI32Buffer views a buffer as n int32 values, checking the size.
func DevI32Buffer(b *cuda.Buffer, n int) (DevI32, error) {
	if int64(n)*4 > b.Size() {
		return DevI32{}, fmt.Errorf("kernels: %d int32 do not fit a buffer of %d bytes", n, b.Size())
	}
	return DevI32{b.Ptr(), n}, nil
}
