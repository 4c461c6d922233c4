package synth

import (
	"encoding/binary"
	"fmt"
	"slices"

	"llmserve/gguf"
)

// RawTensor is a tensor info as Raw.Encode writes it: no field is checked,
// so that it may describe data no reader should accept.
type RawTensor struct {
	Name   string
	Dims   []uint64 // ggml order
	Type   gguf.Type
	Offset uint64 // from the start of the data section
}

// Raw is a GGUF file taken apart: header fields, metadata, tensor infos and
// the data section, each written back by Encode exactly as given. Tests of
// malformed input change one part and encode the file again; a Writer would
// refuse most of the results.
type Raw struct {
	Version   uint32
	KV        []gguf.KV
	Tensors   []RawTensor
	Alignment int    // padding before the data section, a power of two
	Data      []byte // the data section
}

// RawFrom copies the parts of a parsed file. The copy shares nothing with f.
func RawFrom(f *gguf.File) *Raw {
	r := &Raw{Version: f.Version, KV: slices.Clone(f.KV), Alignment: int(f.Alignment)}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		dims := make([]uint64, len(t.Dims))
		for j, d := range t.Dims {
			dims[j] = uint64(d)
		}
		r.Tensors = append(r.Tensors, RawTensor{Name: t.Name, Dims: dims, Type: t.Type, Offset: uint64(t.Offset)})
	}
	end := int64(0)
	for i := range f.Tensors {
		end = max(end, f.Tensors[i].Offset+f.Tensors[i].Size)
	}
	r.Data = make([]byte, end)
	for i := range f.Tensors {
		copy(r.Data[f.Tensors[i].Offset:], f.TensorData(&f.Tensors[i]))
	}
	return r
}

// Clone returns a deep copy of r's metadata list and tensor infos (Data is
// shared: Encode never writes to it).
func (r *Raw) Clone() *Raw {
	c := *r
	c.KV = slices.Clone(r.KV)
	c.Tensors = slices.Clone(r.Tensors)
	for i := range c.Tensors {
		c.Tensors[i].Dims = slices.Clone(c.Tensors[i].Dims)
	}
	return &c
}

// Index returns the position of key in r.KV, or -1.
func (r *Raw) Index(key string) int {
	return slices.IndexFunc(r.KV, func(kv gguf.KV) bool { return kv.Key == key })
}

// Set replaces the value of key, or appends it.
func (r *Raw) Set(key string, v gguf.Value) {
	if i := r.Index(key); i >= 0 {
		r.KV[i].Value = v
		return
	}
	r.KV = append(r.KV, gguf.KV{Key: key, Value: v})
}

// Delete removes key.
func (r *Raw) Delete(key string) {
	if i := r.Index(key); i >= 0 {
		r.KV = slices.Delete(r.KV, i, i+1)
	}
}

// Tensor returns the info of the named tensor, or nil.
func (r *Raw) Tensor(name string) *RawTensor {
	for i := range r.Tensors {
		if r.Tensors[i].Name == name {
			return &r.Tensors[i]
		}
	}
	return nil
}

// Encode writes the file: header, metadata, tensor infos, padding to
// Alignment, data.
func (r *Raw) Encode() ([]byte, error) {
	le := binary.LittleEndian
	b := []byte(gguf.Magic)
	b = le.AppendUint32(b, r.Version)
	b = le.AppendUint64(b, uint64(len(r.Tensors)))
	b = le.AppendUint64(b, uint64(len(r.KV)))
	str := func(s string) { b = le.AppendUint64(b, uint64(len(s))); b = append(b, s...) }
	for _, kv := range r.KV {
		v, err := gguf.EncodeValue(kv.Value)
		if err != nil {
			return nil, fmt.Errorf("synth: key %q: %w", kv.Key, err)
		}
		str(kv.Key)
		b = append(b, v...)
	}
	for _, t := range r.Tensors {
		str(t.Name)
		b = le.AppendUint32(b, uint32(len(t.Dims)))
		for _, d := range t.Dims {
			b = le.AppendUint64(b, d)
		}
		b = le.AppendUint32(b, uint32(t.Type))
		b = le.AppendUint64(b, t.Offset)
	}
	a := max(r.Alignment, 1)
	for len(b)%a != 0 {
		b = append(b, 0)
	}
	return append(b, r.Data...), nil
}

// Tiny is the smallest model shape that still has every feature of its
// architecture: width 32, 2 blocks, 4 heads over 2 KV heads of 8, FFN 64,
// context 64. With BuiltinVocab an F32 file is about 150 KiB.
func Tiny(arch string) (Config, error) {
	c, err := Shape(arch, "tiny")
	if err != nil {
		return Config{}, err
	}
	c.Name = modelName(arch, "micro")
	c.setDims(32, 2, 4, 2, 8, 64, true)
	c.ContextLength = 64
	if c.RopeScaling != nil {
		s := *c.RopeScaling
		c.RopeScaling = &s
	}
	return c, c.Validate()
}
