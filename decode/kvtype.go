package decode

import (
	"fmt"
	"strings"
)

// KVType is the element type of the KV cache's cells, named as llama.cpp's
// --cache-type-k and --cache-type-v name them.
type KVType int

const (
	KVDefault KVType = iota // the engine's default (f16 on the CPU)
	KVF32                   // 4 bytes a value
	KVF16                   // IEEE half, 2 bytes a value, rounded to nearest even
	KVQ8_0                  // ggml's q8_0: blocks of 32 int8 values and one f16 scale, 34 bytes
)

// String is the llama.cpp name of the type.
func (t KVType) String() string {
	switch t {
	case KVF32:
		return "f32"
	case KVF16:
		return "f16"
	case KVQ8_0:
		return "q8_0"
	}
	return "default"
}

// ParseKVType reads a cache type by its llama.cpp name (f32, f16, q8_0).
func ParseKVType(s string) (KVType, error) {
	switch strings.ToLower(s) {
	case "f32":
		return KVF32, nil
	case "f16":
		return KVF16, nil
	case "q8_0":
		return KVQ8_0, nil
	case "bf16", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1":
		return 0, fmt.Errorf("decode: KV cache type %q is not supported; use f32, f16 or q8_0", s)
	}
	return 0, fmt.Errorf("decode: unknown KV cache type %q (f32, f16 or q8_0)", s)
}

// rowBytes is the size of one token's row of dim values, or an error when
// the type cannot hold rows of that width.
func (t KVType) rowBytes(dim int) (int, error) {
	switch t {
	case KVF32:
		return 4 * dim, nil
	case KVF16:
		return 2 * dim, nil
	case KVQ8_0:
		if dim%q8Block != 0 {
			return 0, fmt.Errorf("decode: a q8_0 KV cache needs rows of a multiple of %d values, the model's are %d", q8Block, dim)
		}
		return dim / q8Block * q8BlockBytes, nil
	}
	return 0, fmt.Errorf("decode: KV cache type %d", int(t))
}

const (
	q8Block      = 32 // values per q8_0 block
	q8BlockBytes = 34 // f16 scale + 32 int8
)
