package kernels

import (
	"fmt"
	"math"

	"llmserve/gguf"
)

// dequantizeRow expands one row of a float or Q8_0 matrix.
func dequantizeRow(t gguf.Type, src []byte, dst []float32) error {
	switch t {
	case gguf.TypeF32:
		for i := range dst {
			dst[i] = math.Float32frombits(uint32(src[4*i]) | uint32(src[4*i+1])<<8 | uint32(src[4*i+2])<<16 | uint32(src[4*i+3])<<24)
		}
	case gguf.TypeF16:
		for i := range dst {
			dst[i] = f16(le16(src[2*i:]))
		}
	case gguf.TypeBF16:
		for i := range dst {
			dst[i] = bf16(le16(src[2*i:]))
		}
	case gguf.TypeQ8_0:
		for b := 0; b < len(dst)/32; b++ {
			d := f16(le16(src[34*b:]))
			for j := 0; j < 32; j++ {
				dst[32*b+j] = d * float32(int8(src[34*b+2+j]))
			}
		}
	default:
		return fmt.Errorf("dequantizing %s is not supported yet", t)
	}
	return nil
}
