package model_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"llmserve/decode"
	"llmserve/gguf"
	"llmserve/model"
	"llmserve/model/synth"
)

// mutateKV changes metadata entry i of r in one of a dozen ways chosen by
// kind, with v as the new value's source.
func mutateKV(r *synth.Raw, i, kind uint8, v uint64) {
	if len(r.KV) == 0 {
		return
	}
	kv := &r.KV[int(i)%len(r.KV)]
	switch kind % 12 {
	case 0:
		kv.Value = gguf.Value{Type: gguf.ValueUint32, V: uint32(v)}
	case 1:
		kv.Value = gguf.Value{Type: gguf.ValueInt64, V: int64(v)}
	case 2:
		kv.Value = gguf.Value{Type: gguf.ValueFloat32, V: math.Float32frombits(uint32(v))}
	case 3:
		kv.Value = gguf.Value{Type: gguf.ValueFloat64, V: math.Float64frombits(v)}
	case 4:
		kv.Value = gguf.Value{Type: gguf.ValueString, V: strings.Repeat("x", int(v%64))}
	case 5:
		r.KV = slices.Delete(r.KV, int(i)%len(r.KV), int(i)%len(r.KV)+1)
	case 6:
		kv.Value = gguf.Value{Type: gguf.ValueBool, V: v&1 == 1}
	case 7:
		kv.Value = gguf.Value{Type: gguf.ValueArray, V: gguf.Array{Type: gguf.ValueUint32, Elems: make([]uint32, v%300)}}
	case 8: // shorten an array
		if a, ok := kv.Value.V.(gguf.Array); ok {
			kv.Value.V = shorten(a, int(v))
		}
	case 9:
		kv.Value = gguf.Value{Type: gguf.ValueUint64, V: v}
	case 10: // nudge an integer
		if n, ok := kv.Value.V.(uint32); ok {
			kv.Value.V = n + uint32(int8(v))
		}
	case 11: // a small integer, where the interesting values are
		kv.Value = gguf.Value{Type: gguf.ValueUint32, V: uint32(v % 130)}
	}
}

// shorten keeps the first n%len elements of a string or int32 array.
func shorten(a gguf.Array, n int) gguf.Array {
	switch e := a.Elems.(type) {
	case []string:
		if len(e) > 0 {
			a.Elems = e[:n%len(e)]
		}
	case []int32:
		if len(e) > 0 {
			a.Elems = e[:n%len(e)]
		}
	case []float32:
		if len(e) > 0 {
			a.Elems = e[:n%len(e)]
		}
	}
	return a
}

// mutateTensor changes tensor info i of r in one of a dozen ways chosen by
// field, with v as the new value's source.
func mutateTensor(r *synth.Raw, i, field uint8, v uint64) {
	if len(r.Tensors) == 0 {
		return
	}
	k := int(i) % len(r.Tensors)
	t := &r.Tensors[k]
	switch field % 12 {
	case 0:
		t.Dims[0] = v
	case 1:
		t.Dims[len(t.Dims)-1] = v
	case 2:
		t.Type = gguf.Type(v % 40)
	case 3:
		t.Offset = v
	case 4:
		t.Offset += 32 * (v % 64)
	case 5:
		slices.Reverse(t.Dims)
	case 6:
		r.Tensors = slices.Delete(r.Tensors, k, k+1)
	case 7:
		r.Tensors = append(r.Tensors, *t)
	case 8:
		if len(t.Dims) > 1 {
			t.Dims = t.Dims[:len(t.Dims)-1]
		}
	case 9:
		t.Dims = append(t.Dims, v%4+1)
	case 10:
		t.Name = r.Tensors[int(v)%len(r.Tensors)].Name
	case 11:
		t.Dims[0] = t.Dims[0] + uint64(int8(v))
	}
}

// loadAndStep parses data, loads it as the binary does and, when it loads,
// runs the CPU engine over two tokens. Refusals must be one line; a model
// that loads must run.
func loadAndStep(t *testing.T, data []byte) {
	f, err := gguf.Parse(data)
	if err != nil {
		if !oneLine(err) {
			t.Fatalf("parse error is not one line: %q", err)
		}
		return
	}
	m, err := model.LoadChecked(f)
	if err != nil {
		if !oneLine(err) {
			t.Fatalf("load error is not one line: %q", err)
		}
		return
	}
	e, err := decode.NewCPUEngine(m, decode.CPUOptions{Context: 8, MaxSeqs: 1, MaxBatch: 4, Threads: 1})
	if err != nil {
		if !oneLine(err) {
			t.Fatalf("engine error is not one line: %q", err)
		}
		return
	}
	defer e.Close()
	if err := generate(e, []int32{0, int32(m.Vocab - 1)}, 1, false); err != nil {
		t.Fatalf("a model that loads does not run: %v", err)
	}
}

// FuzzLoad mutates one metadata value and one tensor info of a tiny
// synthetic model of each architecture, then loads the result and runs a
// step of the ones that load.
func FuzzLoad(f *testing.F) {
	var bases []*synth.Raw
	for _, arch := range fuzzArches {
		bases = append(bases, tinyRaw(f, arch))
	}
	f.Add(uint8(0), uint8(0), uint8(0), uint64(0), uint8(0), uint8(0), uint64(0))
	f.Add(uint8(1), uint8(5), uint8(2), uint64(0x7fc00000), uint8(3), uint8(1), uint64(1<<56))
	f.Add(uint8(2), uint8(9), uint8(11), uint64(7), uint8(20), uint8(2), uint64(1))
	f.Add(uint8(0), uint8(14), uint8(8), uint64(100), uint8(1), uint8(4), uint64(3))
	f.Fuzz(func(t *testing.T, arch, kvIdx, kvKind uint8, kvVal uint64, tIdx, tField uint8, tVal uint64) {
		r := bases[int(arch)%len(bases)].Clone()
		mutateKV(r, kvIdx, kvKind, kvVal)
		mutateTensor(r, tIdx, tField, tVal)
		data, err := r.Encode()
		if err != nil {
			return
		}
		loadAndStep(t, data)
	})
}

// FuzzLoadHeader mutates the bytes of a tiny model's header (metadata and
// tensor infos) over its unchanged tensor data.
func FuzzLoadHeader(f *testing.F) {
	base := tinyRaw(f, "llama")
	data := base.Clone()
	data.Data = nil
	header, err := data.Encode()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(header)
	f.Fuzz(func(t *testing.T, header []byte) {
		loadAndStep(t, append(slices.Clip(header), base.Data...))
	})
}

// TestFuzzSeedsLoad runs the seed mutations as a plain test, so that the
// fuzz targets' code is exercised by every test run.
func TestFuzzSeedsLoad(t *testing.T) {
	for _, arch := range fuzzArches {
		r := tinyRaw(t, arch)
		for kind := uint8(0); kind < 12; kind++ {
			for field := uint8(0); field < 12; field++ {
				c := r.Clone()
				mutateKV(c, kind*3, kind, 1<<40+uint64(kind))
				mutateTensor(c, field*2, field, uint64(field)*977)
				data, err := c.Encode()
				if err != nil {
					continue
				}
				loadAndStep(t, data)
			}
		}
	}
}

// fuzzArches are the synth architectures the fuzz targets start from.
var fuzzArches = []string{"llama", "qwen2", "qwen3", "gemma2", "phi3", "mixtral"}
