package kernels

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"llmserve/gguf"
)

func TestWiden(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const rows, cols = 3, 512
	t.Run("Q6_K", func(t *testing.T) {
		data := make([]byte, rows*2*210)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		out, err := Widen(gguf.TypeQ6_K, data, rows, cols)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != rows*2*224 {
			t.Fatalf("%d bytes, want %d", len(out), rows*2*224)
		}
		for b := 0; b < rows*2; b++ {
			if !bytes.Equal(out[b*224:b*224+210], data[b*210:(b+1)*210]) {
				t.Errorf("block %d moved wrongly", b)
			}
			if !bytes.Equal(out[b*224+210:(b+1)*224], make([]byte, 14)) {
				t.Errorf("block %d: padding not zero", b)
			}
		}
	})
	t.Run("Q8_0", func(t *testing.T) {
		data := make([]byte, rows*cols/32*34)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		out, err := Widen(gguf.TypeQ8_0, data, rows, cols)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != len(data) {
			t.Fatalf("%d bytes, want %d", len(out), len(data))
		}
		rb := cols / 32 * 34
		for r := 0; r < rows; r++ {
			src, dst := data[r*rb:(r+1)*rb], out[r*rb:(r+1)*rb]
			for j := 0; j < cols/32; j++ {
				if !bytes.Equal(dst[32*j:32*j+32], src[34*j+2:34*j+34]) {
					t.Errorf("row %d block %d: values moved wrongly", r, j)
				}
				if !bytes.Equal(dst[cols+2*j:cols+2*j+2], src[34*j:34*j+2]) {
					t.Errorf("row %d block %d: scale moved wrongly", r, j)
				}
			}
		}
	})
}

func TestWidenRejects(t *testing.T) {
	for _, c := range []struct {
		name string
		typ  gguf.Type
		cols int
		n    int
	}{
		{"Q4_K has none", gguf.TypeQ4_K, 256, 144},
		{"cols not whole 256", gguf.TypeQ8_0, 96, 102},
		{"wrong size", gguf.TypeQ6_K, 256, 209},
	} {
		if _, err := Widen(c.typ, make([]byte, c.n), 1, c.cols); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	if Widens(gguf.TypeQ8_0, 0) || !Widens(gguf.TypeQ8_0, 4096) || !Widens(gguf.TypeQ6_K, 14336) || Widens(gguf.TypeF16, 4096) {
		t.Error("Widens disagrees with the layouts")
	}
}
