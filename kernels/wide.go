package kernels

import (
	"fmt"

	"llmserve/gguf"
)

// The wide layouts are how the CUDA products (mvq.cu) keep Q6_K and Q8_0
// matrices, so that every field they read sits at a 16-byte aligned offset
// and is read with 16-byte loads (the GGUF blocks, 210 and 34 bytes, are
// only 2-byte aligned and cost many narrow loads):
//   - Q6_K: each 210-byte block padded to 224 bytes (ql, qh, scales, d at
//     offsets 0, 128, 192, 208, then 14 zero bytes);
//   - Q8_0: each row's quantized values first (cols bytes, block j at 32j),
//     then the blocks' f16 scales (at cols + 2j); the row keeps its size.
//
// Both need rows of whole 256-value blocks, so that every row starts
// 16-byte aligned. The values and their order do not change, so a product
// gives the same bits in either layout.

// Widens says whether a t matrix with rows of cols values has a wide
// layout.
func Widens(t gguf.Type, cols int) bool {
	return (t == gguf.TypeQ6_K || t == gguf.TypeQ8_0) && cols > 0 && cols%256 == 0
}

// StoresWide says whether an engine stores a product's t matrix of rows ×
// cols values in the wide layout: where it has one and the 8-bit products,
// the layout's only readers, take the matrix at every batch size (they
// read rows in pairs, so an odd number of rows, as a vocabulary of 261,
// stays as stored).
func StoresWide(t gguf.Type, rows, cols int) bool { return rows%2 == 0 && Widens(t, cols) }

// wideQ6KBlock is the stride of a Q6_K block in the wide layout.
const wideQ6KBlock = 224

// WideRowBytes is the size of a row of cols values of type t in the wide
// layout.
func WideRowBytes(t gguf.Type, cols int) (int64, error) {
	if !Widens(t, cols) {
		return 0, fmt.Errorf("kernels: %v rows of %d values have no wide layout", t, cols)
	}
	if t == gguf.TypeQ6_K {
		return int64(cols/256) * wideQ6KBlock, nil
	}
	return t.RowBytes(int64(cols))
}

// Widen returns the rows × cols matrix data (type t, GGUF layout) in the
// wide layout.
func Widen(t gguf.Type, data []byte, rows, cols int) ([]byte, error) {
	wide, err := WideRowBytes(t, cols)
	if err != nil {
		return nil, err
	}
	rb, err := t.RowBytes(int64(cols))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) != int64(rows)*rb {
		return nil, fmt.Errorf("kernels: widen %v %d×%d: %d bytes, want %d", t, rows, cols, len(data), int64(rows)*rb)
	}
	out := make([]byte, int64(rows)*wide)
	for r := 0; r < rows; r++ {
		src, dst := data[int64(r)*rb:int64(r+1)*rb], out[int64(r)*wide:int64(r+1)*wide]
		switch t {
		case gguf.TypeQ6_K:
			for j := 0; j < cols/256; j++ {
				copy(dst[j*wideQ6KBlock:], src[j*210:(j+1)*210])
			}
		case gguf.TypeQ8_0:
			for j := 0; j < cols/32; j++ {
				blk := src[j*34 : (j+1)*34]
				copy(dst[cols+2*j:], blk[:2])
				copy(dst[32*j:], blk[2:])
			}
		}
	}
	return out, nil
}
