package gguf

import "fmt"

// ValueType is the type tag of a GGUF metadata value.
type ValueType uint32

// The GGUF metadata value types. The numbering is part of the format.
const (
	ValueUint8   ValueType = 0
	ValueInt8    ValueType = 1
	ValueUint16  ValueType = 2
	ValueInt16   ValueType = 3
	ValueUint32  ValueType = 4
	ValueInt32   ValueType = 5
	ValueFloat32 ValueType = 6
	ValueBool    ValueType = 7
	ValueString  ValueType = 8
	ValueArray   ValueType = 9
	ValueUint64  ValueType = 10
	ValueInt64   ValueType = 11
	ValueFloat64 ValueType = 12
)

var valueTypeNames = [...]string{"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string", "array", "uint64", "int64", "float64"}

// String returns the type's name as GGUF documents it.
func (t ValueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("value_type(%d)", uint32(t))
}

// scalarSize is the encoded size of a fixed-size value type, or 0 for
// strings, arrays and unknown types.
func (t ValueType) scalarSize() int {
	switch t {
	case ValueUint8, ValueInt8, ValueBool:
		return 1
	case ValueUint16, ValueInt16:
		return 2
	case ValueUint32, ValueInt32, ValueFloat32:
		return 4
	case ValueUint64, ValueInt64, ValueFloat64:
		return 8
	}
	return 0
}

// Value is one metadata value. V holds, by Type: uint8, int8, uint16, int16,
// uint32, int32, float32, bool, string, uint64, int64, float64, or for
// ValueArray an Array.
type Value struct {
	Type ValueType
	V    any
}

// Array is a metadata array. Elems holds a typed slice: []uint8, []int8,
// []uint16, []int16, []uint32, []int32, []float32, []bool, []string,
// []uint64, []int64, []float64, or []Array for nested arrays.
type Array struct {
	Type  ValueType
	Elems any
}

// Len is the number of elements in the array.
func (a Array) Len() int {
	switch e := a.Elems.(type) {
	case []uint8:
		return len(e)
	case []int8:
		return len(e)
	case []uint16:
		return len(e)
	case []int16:
		return len(e)
	case []uint32:
		return len(e)
	case []int32:
		return len(e)
	case []float32:
		return len(e)
	case []bool:
		return len(e)
	case []string:
		return len(e)
	case []uint64:
		return len(e)
	case []int64:
		return len(e)
	case []float64:
		return len(e)
	case []Array:
		return len(e)
	}
	return 0
}

// KV is one metadata entry.
type KV struct {
	Key   string
	Value Value
}

// asInt64 returns an integer value as int64, with ok=false for non-integer
// values and for uint64 values above MaxInt64.
func (v Value) asInt64() (int64, bool) {
	switch x := v.V.(type) {
	case uint8:
		return int64(x), true
	case int8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case int16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint64:
		if x > 1<<63-1 {
			return 0, false
		}
		return int64(x), true
	}
	return 0, false
}
