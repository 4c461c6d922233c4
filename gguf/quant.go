package gguf

import "fmt"

// rowFuncs are the whole-row conversions of one type. Both work on a whole
// number of blocks: len(values) = n·BlockSize and len(blocks) = n·TypeSize.
type rowFuncs struct {
	dequant func(dst []float32, src []byte) // nil when the type cannot be dequantized
	quant   func(dst []byte, src []float32) // nil when the type cannot be quantized
}

// rowFuncsOf returns the conversions llmserve implements for t.
func rowFuncsOf(t Type) rowFuncs {
	switch t {
	case TypeF32:
		return rowFuncs{dequantF32, quantF32}
	case TypeF16:
		return rowFuncs{dequantF16, quantF16}
	case TypeBF16:
		return rowFuncs{dequantBF16, quantBF16}
	case TypeQ4_0:
		return rowFuncs{dequantQ4_0, quantQ4_0}
	case TypeQ4_1:
		return rowFuncs{dequantQ4_1, quantQ4_1}
	case TypeQ5_0:
		return rowFuncs{dequantQ5_0, quantQ5_0}
	case TypeQ5_1:
		return rowFuncs{dequantQ5_1, quantQ5_1}
	case TypeQ8_0:
		return rowFuncs{dequantQ8_0, quantQ8_0}
	case TypeQ2_K:
		return rowFuncs{dequantQ2_K, quantQ2_K}
	case TypeQ3_K:
		return rowFuncs{dequantQ3_K, quantQ3_K}
	case TypeQ4_K:
		return rowFuncs{dequantQ4_K, quantQ4_K}
	case TypeQ5_K:
		return rowFuncs{dequantQ5_K, quantQ5_K}
	case TypeQ6_K:
		return rowFuncs{dequantQ6_K, quantQ6_K}
	case TypeQ8_K:
		return rowFuncs{dequantQ8_K, quantQ8_K}
	}
	return rowFuncs{}
}

// CanDequantize reports whether Dequantize supports t.
func (t Type) CanDequantize() bool { return rowFuncsOf(t).dequant != nil }

// CanQuantize reports whether Quantize supports t.
func (t Type) CanQuantize() bool { return rowFuncsOf(t).quant != nil }

// Dequantize expands the blocks of type t in src into dst. len(dst) must be a
// multiple of t.BlockSize() and src must hold exactly the bytes of those
// blocks. The results are bit for bit those of ggml's reference
// dequantizers.
func Dequantize(t Type, src []byte, dst []float32) error {
	f := rowFuncsOf(t).dequant
	if f == nil {
		return fmt.Errorf("gguf: dequantize: type %s is not supported", t)
	}
	if err := checkBlocks(t, len(dst), len(src)); err != nil {
		return fmt.Errorf("gguf: dequantize: %w", err)
	}
	f(dst, src)
	return nil
}

// Quantize packs src into blocks of type t in dst, following ggml's reference
// quantizers (quantize_row_*_ref, without importance weights), so that the
// blocks are those llama.cpp's quantizer writes. len(src) must be a multiple
// of t.BlockSize() and len(dst) exactly the bytes of those blocks.
func Quantize(t Type, src []float32, dst []byte) error {
	f := rowFuncsOf(t).quant
	if f == nil {
		return fmt.Errorf("gguf: quantize: type %s is not supported", t)
	}
	if err := checkBlocks(t, len(src), len(dst)); err != nil {
		return fmt.Errorf("gguf: quantize: %w", err)
	}
	f(dst, src)
	return nil
}

// checkBlocks checks that n values of type t make whole blocks stored in
// exactly nbytes bytes.
func checkBlocks(t Type, n, nbytes int) error {
	bs, ts := t.BlockSize(), t.TypeSize()
	if n%bs != 0 {
		return fmt.Errorf("%d values is not a whole number of %s blocks of %d", n, t, bs)
	}
	if want := n / bs * ts; nbytes != want {
		return fmt.Errorf("%d values of %s take %d bytes, have %d", n, t, want, nbytes)
	}
	return nil
}
