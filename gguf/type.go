// Package gguf reads and writes GGUF files (versions 2 and 3) and knows the
// block layouts of ggml's tensor types: it dequantizes every common type and
// quantizes the ones llmserve writes.
//
// A File is parsed from a byte slice (normally a read-only memory map), so
// tensor data is never copied onto the heap. Every count, length and offset
// read from a file is checked against the bytes that remain before anything
// is allocated, and size arithmetic is checked for overflow.
package gguf

import (
	"fmt"
	"math"
	"math/bits"
)

// Type is a ggml tensor type as stored in a GGUF tensor info.
type Type uint32

// The ggml tensor types. The numbering is ggml's and is part of the format.
const (
	TypeF32     Type = 0
	TypeF16     Type = 1
	TypeQ4_0    Type = 2
	TypeQ4_1    Type = 3
	TypeQ5_0    Type = 6
	TypeQ5_1    Type = 7
	TypeQ8_0    Type = 8
	TypeQ8_1    Type = 9
	TypeQ2_K    Type = 10
	TypeQ3_K    Type = 11
	TypeQ4_K    Type = 12
	TypeQ5_K    Type = 13
	TypeQ6_K    Type = 14
	TypeQ8_K    Type = 15
	TypeIQ2_XXS Type = 16
	TypeIQ2_XS  Type = 17
	TypeIQ3_XXS Type = 18
	TypeIQ1_S   Type = 19
	TypeIQ4_NL  Type = 20
	TypeIQ3_S   Type = 21
	TypeIQ2_S   Type = 22
	TypeIQ4_XS  Type = 23
	TypeI8      Type = 24
	TypeI16     Type = 25
	TypeI32     Type = 26
	TypeI64     Type = 27
	TypeF64     Type = 28
	TypeIQ1_M   Type = 29
	TypeBF16    Type = 30
	TypeTQ1_0   Type = 34
	TypeTQ2_0   Type = 35
	TypeMXFP4   Type = 39
)

// QK_K is the number of values in one super-block of the k-quant types.
const QK_K = 256

// typeInfo is the block geometry of one type: blockSize values are stored in
// typeSize bytes.
type typeInfo struct {
	name      string
	blockSize int
	typeSize  int
}

// typeTable lists every type whose block geometry is known. Types listed here
// can be parsed, sized and skipped; Type.CanDequantize says which ones
// llmserve can also compute with.
var typeTable = map[Type]typeInfo{
	TypeF32:     {"F32", 1, 4},
	TypeF16:     {"F16", 1, 2},
	TypeQ4_0:    {"Q4_0", 32, 18},
	TypeQ4_1:    {"Q4_1", 32, 20},
	TypeQ5_0:    {"Q5_0", 32, 22},
	TypeQ5_1:    {"Q5_1", 32, 24},
	TypeQ8_0:    {"Q8_0", 32, 34},
	TypeQ8_1:    {"Q8_1", 32, 36},
	TypeQ2_K:    {"Q2_K", QK_K, 84},
	TypeQ3_K:    {"Q3_K", QK_K, 110},
	TypeQ4_K:    {"Q4_K", QK_K, 144},
	TypeQ5_K:    {"Q5_K", QK_K, 176},
	TypeQ6_K:    {"Q6_K", QK_K, 210},
	TypeQ8_K:    {"Q8_K", QK_K, 292},
	TypeIQ2_XXS: {"IQ2_XXS", QK_K, 66},
	TypeIQ2_XS:  {"IQ2_XS", QK_K, 74},
	TypeIQ3_XXS: {"IQ3_XXS", QK_K, 98},
	TypeIQ1_S:   {"IQ1_S", QK_K, 50},
	TypeIQ4_NL:  {"IQ4_NL", 32, 18},
	TypeIQ3_S:   {"IQ3_S", QK_K, 110},
	TypeIQ2_S:   {"IQ2_S", QK_K, 82},
	TypeIQ4_XS:  {"IQ4_XS", QK_K, 136},
	TypeI8:      {"I8", 1, 1},
	TypeI16:     {"I16", 1, 2},
	TypeI32:     {"I32", 1, 4},
	TypeI64:     {"I64", 1, 8},
	TypeF64:     {"F64", 1, 8},
	TypeIQ1_M:   {"IQ1_M", QK_K, 56},
	TypeBF16:    {"BF16", 1, 2},
	TypeTQ1_0:   {"TQ1_0", QK_K, 54},
	TypeTQ2_0:   {"TQ2_0", QK_K, 66},
	TypeMXFP4:   {"MXFP4", 32, 17},
}

// String returns ggml's name for the type, or "type(N)" for an unknown one.
func (t Type) String() string {
	if ti, ok := typeTable[t]; ok {
		return ti.name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// Known reports whether the block geometry of t is known.
func (t Type) Known() bool {
	_, ok := typeTable[t]
	return ok
}

// BlockSize is the number of values in one block of t (1 for plain types),
// or 0 for an unknown type.
func (t Type) BlockSize() int { return typeTable[t].blockSize }

// TypeSize is the number of bytes in one block of t, or 0 for an unknown type.
func (t Type) TypeSize() int { return typeTable[t].typeSize }

// ParseType returns the type named s (ggml's spelling, e.g. "Q4_K").
func ParseType(s string) (Type, error) {
	for t, ti := range typeTable {
		if ti.name == s {
			return t, nil
		}
	}
	return 0, fmt.Errorf("gguf: unknown tensor type %q", s)
}

// RowBytes returns the bytes that n values of type t occupy. n must be a
// multiple of the block size; a size that does not fit in an int64 is an
// error, never a wrapped-around value.
func (t Type) RowBytes(n int64) (int64, error) {
	ti, ok := typeTable[t]
	if !ok {
		return 0, fmt.Errorf("gguf: unknown tensor type %d", uint32(t))
	}
	if n < 0 || n%int64(ti.blockSize) != 0 {
		return 0, fmt.Errorf("gguf: %d values is not a whole number of %s blocks of %d", n, ti.name, ti.blockSize)
	}
	hi, lo := bits.Mul64(uint64(n/int64(ti.blockSize)), uint64(ti.typeSize))
	if hi != 0 || lo > math.MaxInt64 {
		return 0, fmt.Errorf("gguf: %d values of %s take more than %d bytes", n, ti.name, int64(math.MaxInt64))
	}
	return int64(lo), nil
}
