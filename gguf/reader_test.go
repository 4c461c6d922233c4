package gguf

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"llmserve/internal/shared"
)

// sharedGGUFs lists every GGUF file in the shared data, skipping the test
// when the data is absent.
func sharedGGUFs(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, sub := range []string{"models", "vocab", "golden"} {
		files = append(files, shared.Glob(t, sub+"/*.gguf")...)
	}
	return files
}

func TestOpenSharedFiles(t *testing.T) {
	for _, p := range sharedGGUFs(t) {
		t.Run(filepath.Base(p), func(t *testing.T) {
			f, err := Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.String("general.architecture"); err != nil {
				t.Errorf("general.architecture: %v", err)
			}
			if _, err := f.Strings("tokenizer.ggml.tokens"); err != nil {
				t.Errorf("tokenizer.ggml.tokens: %v", err)
			}
			for i := range f.Tensors {
				ti := &f.Tensors[i]
				if got := int64(len(f.TensorData(ti))); got != ti.Size {
					t.Errorf("tensor %q: %d data bytes, info says %d", ti.Name, got, ti.Size)
				}
			}
		})
	}
}

func TestStoriesMetadata(t *testing.T) {
	f, err := Open(shared.Path(t, "models/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for key, want := range map[string]uint32{
		"llama.block_count": 5, "llama.embedding_length": 64, "llama.attention.head_count": 8,
		"llama.attention.head_count_kv": 4, "llama.context_length": 128, "tokenizer.ggml.bos_token_id": 1,
	} {
		if got, err := f.Uint32(key); err != nil || got != want {
			t.Errorf("%s = %d, %v; want %d", key, got, err, want)
		}
	}
	if eps, err := f.Float32("llama.attention.layer_norm_rms_epsilon"); err != nil || eps != 1e-5 {
		t.Errorf("rms eps = %v, %v", eps, err)
	}
	tok, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil || len(tok) != 512 {
		t.Fatalf("tokens: %d, %v", len(tok), err)
	}
	ti, ok := f.Tensor("token_embd.weight")
	if !ok {
		t.Fatal("no token_embd.weight")
	}
	if ti.Type != TypeF32 || len(ti.Dims) != 2 || ti.Dims[0] != 64 || ti.Dims[1] != 512 {
		t.Errorf("token_embd.weight: %s %v", ti.Type, ti.Dims)
	}
}

func TestAccessorErrors(t *testing.T) {
	f, err := Parse(build(t, []kvSpec{{"a.str", ValueString, "x"}, {"a.f", ValueFloat32, float32(1)}, {"a.neg", ValueInt32, int32(-1)}}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Uint32("missing"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("missing key: %v", err)
	}
	if _, err := f.Uint32("a.str"); err == nil || !strings.Contains(err.Error(), "is string") {
		t.Errorf("mistyped key: %v", err)
	}
	if _, err := f.Uint32("a.neg"); err == nil {
		t.Error("negative value read as uint32")
	}
	if _, err := f.Strings("a.f"); err == nil {
		t.Error("float read as strings")
	}
}

// kvSpec and tensorSpec describe a test file for build.
type kvSpec struct {
	key string
	t   ValueType
	v   any
}

type tensorSpec struct {
	name   string
	dims   []uint64
	t      Type
	offset uint64
}

// build encodes a GGUF v3 file by hand, with dataBytes of zero tensor data.
func build(t *testing.T, kvs []kvSpec, tensors []tensorSpec, dataBytes ...int) []byte {
	t.Helper()
	var b bytes.Buffer
	le := binary.LittleEndian
	w := func(v any) { binary.Write(&b, le, v) }
	ws := func(s string) { w(uint64(len(s))); b.WriteString(s) }
	b.WriteString("GGUF")
	w(uint32(3))
	w(uint64(len(tensors)))
	w(uint64(len(kvs)))
	for _, kv := range kvs {
		ws(kv.key)
		w(uint32(kv.t))
		switch v := kv.v.(type) {
		case string:
			ws(v)
		case []string:
			w(uint32(ValueString))
			w(uint64(len(v)))
			for _, s := range v {
				ws(s)
			}
		case []any:
			for _, e := range v {
				w(e)
			}
		default:
			w(v)
		}
	}
	for _, ts := range tensors {
		ws(ts.name)
		w(uint32(len(ts.dims)))
		for _, d := range ts.dims {
			w(d)
		}
		w(uint32(ts.t))
		w(ts.offset)
	}
	for b.Len()%DefaultAlignment != 0 {
		b.WriteByte(0)
	}
	if len(dataBytes) > 0 {
		b.Write(make([]byte, dataBytes[0]))
	}
	return b.Bytes()
}

func TestMalformed(t *testing.T) {
	good := []kvSpec{{"general.architecture", ValueString, "llama"}}
	f32 := func(name string, off uint64, dims ...uint64) tensorSpec { return tensorSpec{name, dims, TypeF32, off} }
	patch := func(b []byte, off int, v uint32) []byte {
		c := append([]byte(nil), b...)
		binary.LittleEndian.PutUint32(c[off:], v)
		return c
	}
	base := build(t, good, []tensorSpec{f32("w", 0, 8)}, 32)
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "end of file"},
		{"wrong magic", append([]byte("GGML"), base[4:]...), "bad magic"},
		{"version 1", patch(base, 4, 1), "unsupported GGUF version 1"},
		{"version 4", patch(base, 4, 4), "unsupported GGUF version 4"},
		{"tensor count larger than file", patch(patch(base, 8, 0xffffffff), 12, 0xffff), "tensor count"},
		{"metadata count larger than file", patch(base, 16, 1<<30), "metadata count"},
		{"string length larger than file", patch(base, 24, 1<<31), "length"},
		{"unknown value type", patch(base, 52, 99), "unknown value type 99"},
		{"duplicate key", build(t, append(good, good...), nil), "duplicate metadata key"},
		{"array count larger than file", build(t, []kvSpec{{"a", ValueArray, []any{uint32(ValueUint32), uint64(1 << 40)}}}, nil), "element count"},
		{"unknown array element type", build(t, []kvSpec{{"a", ValueArray, []any{uint32(77), uint64(1)}}}, nil), "unknown array element type 77"},
		{"bad bool", build(t, []kvSpec{{"a", ValueBool, uint8(7)}}, nil), "bool byte is 7"},
		{"alignment not a power of two", build(t, []kvSpec{{"general.alignment", ValueUint32, uint32(24)}}, nil), "not a power of two"},
		{"duplicate tensor", build(t, good, []tensorSpec{f32("w", 0, 8), f32("w", 32, 8)}, 64), "duplicate tensor name"},
		{"zero dimensions", build(t, good, []tensorSpec{{"w", nil, TypeF32, 0}}, 32), "0 dimensions"},
		{"five dimensions", build(t, good, []tensorSpec{f32("w", 0, 1, 1, 1, 1, 1)}, 32), "5 dimensions"},
		{"dimension overflow", build(t, good, []tensorSpec{f32("w", 0, 1<<32, 1<<32, 4)}, 32), "overflow"},
		{"unknown tensor type", build(t, good, []tensorSpec{{"w", []uint64{8}, Type(200), 0}}, 32), "unknown tensor type 200"},
		{"row not whole blocks", build(t, good, []tensorSpec{{"w", []uint64{33}, TypeQ8_0, 0}}, 64), "not a multiple"},
		{"misaligned tensor", build(t, good, []tensorSpec{f32("w", 4, 8)}, 64), "not aligned"},
		{"data outside file", build(t, good, []tensorSpec{f32("w", 0, 1024)}, 32), "outside"},
		{"offset far outside file", build(t, good, []tensorSpec{f32("w", 1<<40, 8)}, 32), "outside"},
		{"size overflows int64", build(t, good, []tensorSpec{f32("w", 0, 64, 1<<56)}, 32), "more than"},
		{"F64 size overflows int64", build(t, good, []tensorSpec{{"w", []uint64{1 << 61}, TypeF64, 0}}, 32), "more than"},
		{"overlapping tensors", build(t, good, []tensorSpec{f32("a", 0, 16), f32("b", 32, 8)}, 64), "overlaps"},
		{"alignment too large", build(t, []kvSpec{{"general.alignment", ValueUint32, uint32(1 << 30)}}, nil), "larger than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := Parse(c.data)
			if err == nil {
				t.Fatalf("parsed without error: %d tensors", len(f.Tensors))
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not mention %q", err, c.want)
			}
		})
	}
}

// TestTruncatedEverywhere cuts a real file at every offset of its header and
// at a spread of offsets in its data: each must fail with an error.
func TestTruncatedEverywhere(t *testing.T) {
	data, err := os.ReadFile(shared.Path(t, "models/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	full, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	step := 1
	if testing.Short() {
		step = 7
	}
	for n := 0; n < len(data); n += step {
		if n > int(full.DataOffset) {
			step = 4099
		}
		if _, err := Parse(data[:n]); err == nil {
			t.Fatalf("file cut to %d of %d bytes parsed without error", n, len(data))
		}
	}
}
