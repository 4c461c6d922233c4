package gguf

import (
	"bytes"
	"math/rand/v2"
	"os"
	"reflect"
	"testing"

	"llmserve/internal/shared"
)

// roundTripKVs holds one value of every scalar type and an array of every
// element type, nested arrays included.
var roundTripKVs = []KV{
	{"general.architecture", Value{ValueString, "llama"}},
	{"t.uint8", Value{ValueUint8, uint8(200)}},
	{"t.int8", Value{ValueInt8, int8(-100)}},
	{"t.uint16", Value{ValueUint16, uint16(60000)}},
	{"t.int16", Value{ValueInt16, int16(-30000)}},
	{"t.uint32", Value{ValueUint32, uint32(4000000000)}},
	{"t.int32", Value{ValueInt32, int32(-2000000000)}},
	{"t.float32", Value{ValueFloat32, float32(-1.5e-7)}},
	{"t.bool", Value{ValueBool, true}},
	{"t.string", Value{ValueString, "héllo\x00world"}},
	{"t.empty_string", Value{ValueString, ""}},
	{"t.uint64", Value{ValueUint64, uint64(1) << 63}},
	{"t.int64", Value{ValueInt64, int64(-1) << 62}},
	{"t.float64", Value{ValueFloat64, 2.718281828459045}},
	{"a.uint8", Value{ValueArray, Array{ValueUint8, []uint8{0, 1, 255}}}},
	{"a.int8", Value{ValueArray, Array{ValueInt8, []int8{-128, 0, 127}}}},
	{"a.uint16", Value{ValueArray, Array{ValueUint16, []uint16{1, 65535}}}},
	{"a.int16", Value{ValueArray, Array{ValueInt16, []int16{-32768, 5}}}},
	{"a.uint32", Value{ValueArray, Array{ValueUint32, []uint32{7, 1 << 31}}}},
	{"a.int32", Value{ValueArray, Array{ValueInt32, []int32{-1, 2, -3}}}},
	{"a.float32", Value{ValueArray, Array{ValueFloat32, []float32{0.5, -0, 3e38}}}},
	{"a.bool", Value{ValueArray, Array{ValueBool, []bool{true, false, true}}}},
	{"a.string", Value{ValueArray, Array{ValueString, []string{"a", "", "Ġthe"}}}},
	{"a.empty", Value{ValueArray, Array{ValueString, []string{}}}},
	{"a.uint64", Value{ValueArray, Array{ValueUint64, []uint64{1 << 40}}}},
	{"a.int64", Value{ValueArray, Array{ValueInt64, []int64{-1 << 40}}}},
	{"a.float64", Value{ValueArray, Array{ValueFloat64, []float64{1e300, -2}}}},
	{"a.nested", Value{ValueArray, Array{ValueArray, []Array{
		{ValueInt32, []int32{1, 2}},
		{ValueString, []string{"x"}},
	}}}},
}

// roundTripTensor is a tensor to write and read back.
type roundTripTensor struct {
	name string
	typ  Type
	dims []int64
}

var roundTripTensors = []roundTripTensor{
	{"token_embd.weight", TypeQ4_K, []int64{256, 3}},
	{"blk.0.attn_norm.weight", TypeF32, []int64{5}},
	{"blk.0.attn_q.weight", TypeQ8_0, []int64{64, 2, 3}},
	{"blk.0.ffn_up.weight", TypeF16, []int64{3, 1, 1, 7}},
	{"blk.0.attn_q.bias", TypeI8, []int64{13}},
	{"output.weight", TypeQ6_K, []int64{256, 2}},
}

// TestWriterRoundTrip writes metadata of every type and tensors of several
// types, some in chunks, and checks that Parse returns every key, value and
// tensor byte unchanged, at the default and at a larger alignment.
func TestWriterRoundTrip(t *testing.T) {
	for _, align := range []uint32{0, 64} {
		rng := rand.New(rand.NewPCG(1, uint64(align)))
		var buf bytes.Buffer
		w := NewWriter(&buf)
		kvs := roundTripKVs
		if align != 0 {
			kvs = append([]KV{{"general.alignment", Value{ValueUint32, align}}}, kvs...)
		}
		for _, kv := range kvs {
			w.Set(kv.Key, kv.Value)
		}
		data := make([][]byte, len(roundTripTensors))
		for i, tt := range roundTripTensors {
			if err := w.AddTensor(tt.name, tt.typ, tt.dims...); err != nil {
				t.Fatal(err)
			}
			data[i] = make([]byte, w.tensors[i].size)
			for j := range data[i] {
				data[i][j] = byte(rng.Uint32())
			}
		}
		for i, tt := range roundTripTensors {
			if i%2 == 0 {
				if err := w.WriteTensor(tt.name, data[i]); err != nil {
					t.Fatal(err)
				}
				continue
			}
			tw, err := w.Tensor(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			for rest := data[i]; len(rest) > 0; {
				n := min(len(rest), 1+int(rng.IntN(7)))
				if _, err := tw.Write(rest[:n]); err != nil {
					t.Fatal(err)
				}
				rest = rest[n:]
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}

		f, err := Parse(buf.Bytes())
		if err != nil {
			t.Fatalf("alignment %d: Parse: %v", align, err)
		}
		if f.Version != 3 {
			t.Errorf("version %d, want 3", f.Version)
		}
		if len(f.KV) != len(kvs) {
			t.Errorf("alignment %d: %d keys read back, want %d", align, len(f.KV), len(kvs))
		}
		for i := range min(len(f.KV), len(kvs)) {
			if !reflect.DeepEqual(f.KV[i], kvs[i]) {
				t.Errorf("key %d: read %#v, wrote %#v", i, f.KV[i], kvs[i])
			}
		}
		if len(f.Tensors) != len(roundTripTensors) {
			t.Fatalf("%d tensors read back, want %d", len(f.Tensors), len(roundTripTensors))
		}
		for i, tt := range roundTripTensors {
			got := &f.Tensors[i]
			if got.Name != tt.name || got.Type != tt.typ || !reflect.DeepEqual(got.Dims, tt.dims) {
				t.Errorf("tensor %d: read %s %s %v, wrote %s %s %v", i, got.Name, got.Type, got.Dims, tt.name, tt.typ, tt.dims)
			}
			if !bytes.Equal(f.TensorData(got), data[i]) {
				t.Errorf("tensor %q: data differs", tt.name)
			}
		}
	}
}

// TestWriterCopiesLlamaCppFiles copies files written by llama.cpp key by key
// and tensor by tensor; the copy must be byte-identical to the original.
func TestWriterCopiesLlamaCppFiles(t *testing.T) {
	for _, rel := range []string{
		"golden/tiny-llama-Q4_K_M.gguf",
		"golden/tiny-qwen2-F32.gguf",
		"models/stories260K.gguf",
		"vocab/ggml-vocab-qwen2.gguf",
	} {
		t.Run(rel, func(t *testing.T) {
			path := shared.Path(t, rel)
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := Parse(want)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			w := NewWriter(&buf)
			for _, kv := range f.KV {
				w.Set(kv.Key, kv.Value)
			}
			for _, ti := range f.Tensors {
				w.AddTensor(ti.Name, ti.Type, ti.Dims...)
			}
			for i := range f.Tensors {
				w.WriteTensor(f.Tensors[i].Name, f.TensorData(&f.Tensors[i]))
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			got := buf.Bytes()
			if !bytes.Equal(got, want) {
				n := 0
				for n < min(len(got), len(want)) && got[n] == want[n] {
					n++
				}
				t.Errorf("copy is %d bytes, original %d; first difference at byte %d", len(got), len(want), n)
			}
		})
	}
}
