package gguf

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"llmserve/internal/shared"
)

// TestDequantizeGolden checks every dequantizer bit for bit against
// golden/dequant/<model>/<tensor>.<type>.f32: the first 16 rows of 256
// values of each tensor of golden/<model>.gguf as ggml's reference
// implementation dequantizes them.
func TestDequantizeGolden(t *testing.T) {
	root := shared.Path(t, "golden/dequant")
	models, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, m := range models {
		if !m.IsDir() {
			continue
		}
		t.Run(m.Name(), func(t *testing.T) {
			f, err := Open(shared.Path(t, "golden/"+m.Name()+".gguf"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			files, err := filepath.Glob(filepath.Join(root, m.Name(), "*.f32"))
			if err != nil {
				t.Fatal(err)
			}
			for _, path := range files {
				checkGoldenTensor(t, f, path)
				checked++
			}
		})
	}
	if checked == 0 {
		t.Fatalf("no golden files under %s", root)
	}
	t.Logf("%d tensors match bit for bit", checked)
}

// checkGoldenTensor compares one <tensor>.<type>.f32 file with the
// dequantized start of that tensor.
func checkGoldenTensor(t *testing.T, f *File, path string) {
	t.Helper()
	base := strings.TrimSuffix(filepath.Base(path), ".f32")
	dot := strings.LastIndexByte(base, '.')
	name, typeName := base[:dot], base[dot+1:]
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float32, len(raw)/4)
	for i := range want {
		want[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	ti, ok := f.Tensor(name)
	if !ok {
		t.Errorf("%s: no tensor %q in the model", base, name)
		return
	}
	if ti.Type.String() != typeName {
		t.Errorf("%s: tensor is %s, golden file says %s", base, ti.Type, typeName)
		return
	}
	nbytes, err := ti.Type.RowBytes(int64(len(want)))
	if err != nil {
		t.Fatalf("%s: %v", base, err)
	}
	got := make([]float32, len(want))
	if err := Dequantize(ti.Type, f.TensorData(ti)[:nbytes], got); err != nil {
		t.Fatalf("%s: %v", base, err)
	}
	bad := 0
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			if bad < 3 {
				t.Errorf("%s: value %d = %g (%#08x), want %g (%#08x)", base, i,
					got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d values differ", base, bad, len(want))
	}
}
