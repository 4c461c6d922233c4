package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
)

// keyAlignment is the metadata key that sets the data alignment.
const keyAlignment = "general.alignment"

// maxAlignment bounds general.alignment in the files written and read;
// llama.cpp wants a power of two (ggml writes 32).
const maxAlignment = 1 << 16

// SetUint8 sets a uint8 value.
func (w *Writer) SetUint8(key string, v uint8) { w.set(key, scalar(ValueUint8, []byte{v})) }

// SetInt8 sets an int8 value.
func (w *Writer) SetInt8(key string, v int8) { w.set(key, scalar(ValueInt8, []byte{byte(v)})) }

// SetUint16 sets a uint16 value.
func (w *Writer) SetUint16(key string, v uint16) {
	w.set(key, binary.LittleEndian.AppendUint16(typed(ValueUint16), v))
}

// SetInt16 sets an int16 value.
func (w *Writer) SetInt16(key string, v int16) {
	w.set(key, binary.LittleEndian.AppendUint16(typed(ValueInt16), uint16(v)))
}

// SetUint32 sets a uint32 value. For general.alignment it also sets the
// alignment of the tensor data, which must be a power of two.
func (w *Writer) SetUint32(key string, v uint32) {
	if key == keyAlignment {
		if v == 0 || v&(v-1) != 0 || v > maxAlignment {
			w.fail(fmt.Errorf("gguf: %s = %d: want a power of two up to %d", key, v, maxAlignment))
			return
		}
		if len(w.tensors) > 0 && int64(v) != w.alignment {
			w.fail(fmt.Errorf("gguf: %s must be set before the first tensor is declared", key))
			return
		}
		w.alignment = int64(v)
	}
	w.set(key, binary.LittleEndian.AppendUint32(typed(ValueUint32), v))
}

// SetInt32 sets an int32 value.
func (w *Writer) SetInt32(key string, v int32) {
	w.set(key, binary.LittleEndian.AppendUint32(typed(ValueInt32), uint32(v)))
}

// SetUint64 sets a uint64 value.
func (w *Writer) SetUint64(key string, v uint64) {
	w.set(key, binary.LittleEndian.AppendUint64(typed(ValueUint64), v))
}

// SetInt64 sets an int64 value.
func (w *Writer) SetInt64(key string, v int64) {
	w.set(key, binary.LittleEndian.AppendUint64(typed(ValueInt64), uint64(v)))
}

// SetFloat32 sets a float32 value.
func (w *Writer) SetFloat32(key string, v float32) {
	w.set(key, binary.LittleEndian.AppendUint32(typed(ValueFloat32), math.Float32bits(v)))
}

// SetFloat64 sets a float64 value.
func (w *Writer) SetFloat64(key string, v float64) {
	w.set(key, binary.LittleEndian.AppendUint64(typed(ValueFloat64), math.Float64bits(v)))
}

// SetBool sets a bool value.
func (w *Writer) SetBool(key string, v bool) {
	b := byte(0)
	if v {
		b = 1
	}
	w.set(key, scalar(ValueBool, []byte{b}))
}

// SetString sets a string value.
func (w *Writer) SetString(key string, v string) { w.set(key, appendString(typed(ValueString), v)) }

// SetStrings sets an array of strings.
func (w *Writer) SetStrings(key string, v []string) { w.SetArray(key, ValueString, v) }

// SetFloat32s sets an array of float32.
func (w *Writer) SetFloat32s(key string, v []float32) { w.SetArray(key, ValueFloat32, v) }

// SetInt32s sets an array of int32.
func (w *Writer) SetInt32s(key string, v []int32) { w.SetArray(key, ValueInt32, v) }

// SetValue sets a scalar of any value type: v must be the Go type that
// matches typ (uint8, int8, uint16, int16, uint32, int32, float32, bool,
// string, uint64, int64, float64).
func (w *Writer) SetValue(key string, typ ValueType, v any) {
	if got, ok := scalarType(v); !ok || got != typ {
		w.fail(fmt.Errorf("gguf: key %q: value type %d given a %T", key, uint32(typ), v))
		return
	}
	switch x := v.(type) {
	case uint8:
		w.SetUint8(key, x)
	case int8:
		w.SetInt8(key, x)
	case uint16:
		w.SetUint16(key, x)
	case int16:
		w.SetInt16(key, x)
	case uint32:
		w.SetUint32(key, x)
	case int32:
		w.SetInt32(key, x)
	case float32:
		w.SetFloat32(key, x)
	case bool:
		w.SetBool(key, x)
	case string:
		w.SetString(key, x)
	case uint64:
		w.SetUint64(key, x)
	case int64:
		w.SetInt64(key, x)
	case float64:
		w.SetFloat64(key, x)
	}
}

// scalarType returns the value type that stores a Go value of v's type.
func scalarType(v any) (ValueType, bool) {
	switch v.(type) {
	case uint8:
		return ValueUint8, true
	case int8:
		return ValueInt8, true
	case uint16:
		return ValueUint16, true
	case int16:
		return ValueInt16, true
	case uint32:
		return ValueUint32, true
	case int32:
		return ValueInt32, true
	case float32:
		return ValueFloat32, true
	case bool:
		return ValueBool, true
	case string:
		return ValueString, true
	case uint64:
		return ValueUint64, true
	case int64:
		return ValueInt64, true
	case float64:
		return ValueFloat64, true
	}
	return 0, false
}

// Set sets a value as the reader returns it (File.KV, File.Value), so that
// metadata can be copied from one file to another.
func (w *Writer) Set(key string, v Value) {
	if v.Type != ValueArray {
		w.SetValue(key, v.Type, v.V)
		return
	}
	a, ok := v.V.(Array)
	if !ok {
		w.fail(fmt.Errorf("gguf: key %q: array value given a %T", key, v.V))
		return
	}
	w.SetArray(key, a.Type, a.Elems)
}

// SetArray sets an array whose elements have type elem; v must be the
// matching slice type ([]uint8, []int8, []uint16, []int16, []uint32,
// []int32, []float32, []bool, []string, []uint64, []int64, []float64, or
// []Array for an array of arrays).
func (w *Writer) SetArray(key string, elem ValueType, v any) {
	b := typed(ValueArray)
	b = binary.LittleEndian.AppendUint32(b, uint32(elem))
	var err error
	b, err = appendArray(b, elem, v)
	if err != nil {
		w.fail(fmt.Errorf("gguf: key %q: %w", key, err))
		return
	}
	w.set(key, b)
}

// appendArray appends the element count and the elements of v to b.
func appendArray(b []byte, elem ValueType, v any) ([]byte, error) {
	le := binary.LittleEndian
	mismatch := fmt.Errorf("array of value type %d given a %T", uint32(elem), v)
	switch elem {
	case ValueUint8:
		x, ok := v.([]uint8)
		if !ok {
			return nil, mismatch
		}
		b = le.AppendUint64(b, uint64(len(x)))
		return append(b, x...), nil
	case ValueInt8:
		x, ok := v.([]int8)
		if !ok {
			return nil, mismatch
		}
		return appendEach(b, x, func(b []byte, e int8) []byte { return append(b, byte(e)) }), nil
	case ValueUint16:
		x, ok := v.([]uint16)
		if !ok {
			return nil, mismatch
		}
		return appendEach(b, x, le.AppendUint16), nil
	case ValueInt16:
		x, ok := v.([]int16)
		if !ok {
			return nil, mismatch
		}
		return appendEach(b, x, func(b []byte, e int16) []byte { return le.AppendUint16(b, uint16(e)) }), nil
	case ValueUint32:
		x, ok := v.([]uint32)
		if !ok {
			return nil, mismatch
		}
		return appendEach(b, x, le.AppendUint32), nil
	case ValueInt32:
		x, ok := v.([]int32)
		if !ok {
			return nil, mismatch
		}
		return appendEach(b, x, func(b []byte, e int32) []byte { return le.AppendUint32(b, uint32(e)) }), nil
	case ValueFloat32:
		x, ok := v.([]float32)
		if !ok {
			return nil, mismatch
		}
		return appendEach(b, x, func(b []byte, e float32) []byte { return le.AppendUint32(b, math.Float32bits(e)) }), nil
	case ValueBool:
		x, ok := v.([]bool)
		if !ok {
			return nil, mismatch
		}
		return appendEach(b, x, func(b []byte, e bool) []byte {
			if e {
				return append(b, 1)
			}
			return append(b, 0)
		}), nil
	case ValueString:
		x, ok := v.([]string)
		if !ok {
			return nil, mismatch
		}
		return appendEach(b, x, appendString), nil
	case ValueUint64:
		x, ok := v.([]uint64)
		if !ok {
			return nil, mismatch
		}
		return appendEach(b, x, le.AppendUint64), nil
	case ValueInt64:
		x, ok := v.([]int64)
		if !ok {
			return nil, mismatch
		}
		return appendEach(b, x, func(b []byte, e int64) []byte { return le.AppendUint64(b, uint64(e)) }), nil
	case ValueFloat64:
		x, ok := v.([]float64)
		if !ok {
			return nil, mismatch
		}
		return appendEach(b, x, func(b []byte, e float64) []byte { return le.AppendUint64(b, math.Float64bits(e)) }), nil
	case ValueArray:
		x, ok := v.([]Array)
		if !ok {
			return nil, mismatch
		}
		b = binary.LittleEndian.AppendUint64(b, uint64(len(x)))
		for i, a := range x {
			var err error
			b = le.AppendUint32(b, uint32(a.Type))
			if b, err = appendArray(b, a.Type, a.Elems); err != nil {
				return nil, fmt.Errorf("element %d: %w", i, err)
			}
		}
		return b, nil
	}
	return nil, fmt.Errorf("unknown array element type %d", uint32(elem))
}

// appendEach appends the count of xs and then each element encoded by enc.
func appendEach[E any](b []byte, xs []E, enc func([]byte, E) []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(len(xs)))
	for _, x := range xs {
		b = enc(b, x)
	}
	return b
}

// typed starts an encoded value with its type.
func typed(t ValueType) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(t)) }

// scalar is an encoded value of type t whose bytes are raw.
func scalar(t ValueType, raw []byte) []byte { return append(typed(t), raw...) }

// appendString appends a GGUF string: a uint64 length and the bytes.
func appendString(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}

// set records an encoded value for key.
func (w *Writer) set(key string, value []byte) {
	if w.err != nil {
		return
	}
	if w.headerDone {
		w.fail(fmt.Errorf("gguf: key %q: set after the header was written", key))
		return
	}
	if key == "" {
		w.fail(fmt.Errorf("gguf: empty metadata key"))
		return
	}
	if key == keyAlignment && ValueType(binary.LittleEndian.Uint32(value)) != ValueUint32 {
		w.fail(fmt.Errorf("gguf: %s must be a uint32", key))
		return
	}
	if i, ok := w.kvIndex[key]; ok {
		w.kvs[i].value = value
		return
	}
	w.kvIndex[key] = len(w.kvs)
	w.kvs = append(w.kvs, encodedKV{key: key, value: value})
}

// EncodeValue returns v as a file stores it after its key: the value type,
// then the value's bytes. Tests use it to assemble files no Writer would
// produce.
func EncodeValue(v Value) ([]byte, error) {
	w := &Writer{kvIndex: map[string]int{}} // only the metadata part is used
	w.Set("value", v)
	if w.err != nil {
		return nil, w.err
	}
	return w.kvs[0].value, nil
}
