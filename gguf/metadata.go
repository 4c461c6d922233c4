package gguf

import (
	"errors"
	"fmt"
	"math"
)

// ErrKeyNotFound is wrapped by accessors when a metadata key is absent.
var ErrKeyNotFound = errors.New("metadata key not found")

// Has reports whether the metadata holds key.
func (f *File) Has(key string) bool {
	_, ok := f.keys[key]
	return ok
}

// Value returns the value stored under key.
func (f *File) Value(key string) (Value, error) {
	i, ok := f.keys[key]
	if !ok {
		return Value{}, fmt.Errorf("gguf: %q: %w", key, ErrKeyNotFound)
	}
	return f.KV[i].Value, nil
}

func mistyped(key string, v Value, want string) error {
	return fmt.Errorf("gguf: %q is %s, want %s", key, v.Type, want)
}

// String returns a string value.
func (f *File) String(key string) (string, error) {
	v, err := f.Value(key)
	if err != nil {
		return "", err
	}
	s, ok := v.V.(string)
	if !ok {
		return "", mistyped(key, v, "string")
	}
	return s, nil
}

// Int64 returns an integer value of any integer type that fits in int64.
func (f *File) Int64(key string) (int64, error) {
	v, err := f.Value(key)
	if err != nil {
		return 0, err
	}
	n, ok := v.asInt64()
	if !ok {
		return 0, mistyped(key, v, "an integer")
	}
	return n, nil
}

// Uint64 returns a non-negative integer value of any integer type.
func (f *File) Uint64(key string) (uint64, error) {
	v, err := f.Value(key)
	if err != nil {
		return 0, err
	}
	if u, ok := v.V.(uint64); ok {
		return u, nil
	}
	n, ok := v.asInt64()
	if !ok {
		return 0, mistyped(key, v, "an unsigned integer")
	}
	if n < 0 {
		return 0, fmt.Errorf("gguf: %q is %d, want a non-negative integer", key, n)
	}
	return uint64(n), nil
}

// Uint32 returns a non-negative integer value that fits in 32 bits.
func (f *File) Uint32(key string) (uint32, error) {
	u, err := f.Uint64(key)
	if err != nil {
		return 0, err
	}
	if u > math.MaxUint32 {
		return 0, fmt.Errorf("gguf: %q is %d, too large for 32 bits", key, u)
	}
	return uint32(u), nil
}

// Float32 returns a float32 or float64 value as float32.
func (f *File) Float32(key string) (float32, error) {
	v, err := f.Value(key)
	if err != nil {
		return 0, err
	}
	switch x := v.V.(type) {
	case float32:
		return x, nil
	case float64:
		return float32(x), nil
	}
	return 0, mistyped(key, v, "a float")
}

// Bool returns a bool value.
func (f *File) Bool(key string) (bool, error) {
	v, err := f.Value(key)
	if err != nil {
		return false, err
	}
	b, ok := v.V.(bool)
	if !ok {
		return false, mistyped(key, v, "bool")
	}
	return b, nil
}

// Array returns an array value.
func (f *File) Array(key string) (Array, error) {
	v, err := f.Value(key)
	if err != nil {
		return Array{}, err
	}
	a, ok := v.V.(Array)
	if !ok {
		return Array{}, mistyped(key, v, "array")
	}
	return a, nil
}

// Strings returns an array of strings. The slice is shared: do not modify it.
func (f *File) Strings(key string) ([]string, error) {
	a, err := f.Array(key)
	if err != nil {
		return nil, err
	}
	s, ok := a.Elems.([]string)
	if !ok {
		return nil, fmt.Errorf("gguf: %q is an array of %s, want strings", key, a.Type)
	}
	return s, nil
}

// Float32s returns an array of float32 (float64 arrays are converted).
func (f *File) Float32s(key string) ([]float32, error) {
	a, err := f.Array(key)
	if err != nil {
		return nil, err
	}
	switch e := a.Elems.(type) {
	case []float32:
		return e, nil
	case []float64:
		s := make([]float32, len(e))
		for i, x := range e {
			s[i] = float32(x)
		}
		return s, nil
	}
	return nil, fmt.Errorf("gguf: %q is an array of %s, want floats", key, a.Type)
}

// Int32s returns an array of integers of any type whose values fit in int32.
func (f *File) Int32s(key string) ([]int32, error) {
	a, err := f.Array(key)
	if err != nil {
		return nil, err
	}
	if e, ok := a.Elems.([]int32); ok {
		return e, nil
	}
	n := a.Len()
	out := make([]int32, n)
	for i := 0; i < n; i++ {
		var x int64
		switch e := a.Elems.(type) {
		case []uint8:
			x = int64(e[i])
		case []int8:
			x = int64(e[i])
		case []uint16:
			x = int64(e[i])
		case []int16:
			x = int64(e[i])
		case []uint32:
			x = int64(e[i])
		case []int64:
			x = e[i]
		case []uint64:
			if e[i] > math.MaxInt32 {
				return nil, fmt.Errorf("gguf: %q[%d] = %d does not fit in int32", key, i, e[i])
			}
			x = int64(e[i])
		default:
			return nil, fmt.Errorf("gguf: %q is an array of %s, want integers", key, a.Type)
		}
		if x < math.MinInt32 || x > math.MaxInt32 {
			return nil, fmt.Errorf("gguf: %q[%d] = %d does not fit in int32", key, i, x)
		}
		out[i] = int32(x)
	}
	return out, nil
}
