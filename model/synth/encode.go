package synth

import (
	"encoding/binary"
	"fmt"
	"math"

	"llmserve/gguf"
)

// encode packs src into dst in type t.
func encode(t gguf.Type, src []float32, dst []byte) error {
	if t != gguf.TypeF32 {
		return fmt.Errorf("type %s not supported yet", t)
	}
	for i, v := range src {
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
	}
	return nil
}
