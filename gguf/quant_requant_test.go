package gguf

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"llmserve/internal/shared"
)

// TestQuantizeMatchesLlamaCpp quantizes the tensors of the F32 golden models
// and compares the blocks with those llama.cpp's quantizer wrote into the
// quantized golden models, for every tensor whose type Quantize supports.
func TestQuantizeMatchesLlamaCpp(t *testing.T) {
	compared := 0 // tensors quantized and compared, over all models
	for _, p := range shared.Glob(t, "golden/tiny-*-*.gguf") {
		name := strings.TrimSuffix(filepath.Base(p), ".gguf")
		arch, _, _ := strings.Cut(strings.TrimPrefix(name, "tiny-"), "-")
		if strings.HasSuffix(name, "-F32") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			ref := openGolden(t, "golden/tiny-"+arch+"-F32.gguf")
			q := openGolden(t, "golden/"+name+".gguf")
			for i := range q.Tensors {
				qt := &q.Tensors[i]
				if qt.Type == TypeF32 || !qt.Type.CanQuantize() {
					continue
				}
				rt, ok := ref.Tensor(qt.Name)
				if !ok || rt.Type != TypeF32 {
					t.Fatalf("%s: no F32 source tensor", qt.Name)
				}
				src := make([]float32, rt.Elements())
				if err := Dequantize(TypeF32, ref.TensorData(rt), src); err != nil {
					t.Fatal(err)
				}
				got := make([]byte, qt.Size)
				if err := Quantize(qt.Type, src, got); err != nil {
					t.Fatalf("%s: %v", qt.Name, err)
				}
				compareBlocks(t, qt, got, q.TensorData(qt))
				compared++
			}
		})
	}
	if compared == 0 {
		t.Fatal("no quantized golden tensor to compare")
	}
}

func openGolden(t *testing.T, rel string) *File {
	t.Helper()
	f, err := Open(shared.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// compareBlocks reports the blocks of got that differ from want.
func compareBlocks(t *testing.T, ti *TensorInfo, got, want []byte) {
	t.Helper()
	ts := ti.Type.TypeSize()
	bad, first := 0, -1
	for b := 0; b < len(want)/ts; b++ {
		if !bytes.Equal(got[b*ts:(b+1)*ts], want[b*ts:(b+1)*ts]) {
			if first < 0 {
				first = b
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s (%s): %d of %d blocks differ from llama.cpp's; first is block %d:\n got  %x\n want %x",
			ti.Name, ti.Type, bad, len(want)/ts, first, got[first*ts:(first+1)*ts], want[first*ts:(first+1)*ts])
	}
}
