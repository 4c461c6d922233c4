package tokenizer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
)

// testMeta is a minimal GGUF metadata reader for tests, until the gguf
// package provides one.
type testMeta map[string]any

var errNoKey = errors.New("key not found")

func readTestMeta(path string) (testMeta, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r := &metaReader{b: data}
	if string(r.next(4)) != "GGUF" {
		return nil, fmt.Errorf("%s: not GGUF", path)
	}
	r.u32()
	r.u64()
	nkv := r.u64()
	m := testMeta{}
	for i := uint64(0); i < nkv && r.err == nil; i++ {
		k := r.str()
		m[k] = r.value(r.u32())
	}
	return m, r.err
}

type metaReader struct {
	b   []byte
	off int
	err error
}

func (r *metaReader) next(n int) []byte {
	if r.err != nil || r.off+n > len(r.b) {
		r.err = errors.New("truncated")
		return make([]byte, n)
	}
	s := r.b[r.off : r.off+n]
	r.off += n
	return s
}
func (r *metaReader) u32() uint32 { return binary.LittleEndian.Uint32(r.next(4)) }
func (r *metaReader) u64() uint64 { return binary.LittleEndian.Uint64(r.next(8)) }
func (r *metaReader) str() string { return string(r.next(int(r.u64()))) }

func (r *metaReader) value(t uint32) any {
	switch t {
	case 0, 1:
		return int64(int8(r.next(1)[0]))
	case 2, 3:
		return int64(int16(binary.LittleEndian.Uint16(r.next(2))))
	case 4:
		return int64(r.u32())
	case 5:
		return int64(int32(r.u32()))
	case 6:
		return float64(math.Float32frombits(r.u32()))
	case 7:
		return r.next(1)[0] != 0
	case 8:
		return r.str()
	case 9:
		et := r.u32()
		n := r.u64()
		arr := make([]any, 0, n)
		for i := uint64(0); i < n && r.err == nil; i++ {
			arr = append(arr, r.value(et))
		}
		return arr
	case 10, 11:
		return int64(r.u64())
	case 12:
		return math.Float64frombits(r.u64())
	}
	r.err = fmt.Errorf("bad type %d", t)
	return nil
}

func (m testMeta) Has(k string) bool { _, ok := m[k]; return ok }
func (m testMeta) String(k string) (string, error) {
	s, ok := m[k].(string)
	if !ok {
		return "", fmt.Errorf("%s: %w", k, errNoKey)
	}
	return s, nil
}
func (m testMeta) Uint32(k string) (uint32, error) {
	v, ok := m[k].(int64)
	if !ok {
		return 0, fmt.Errorf("%s: %w", k, errNoKey)
	}
	return uint32(v), nil
}
func (m testMeta) Bool(k string) (bool, error) {
	v, ok := m[k].(bool)
	if !ok {
		return false, fmt.Errorf("%s: %w", k, errNoKey)
	}
	return v, nil
}
func (m testMeta) Strings(k string) ([]string, error) {
	a, _ := m[k].([]any)
	out := make([]string, len(a))
	for i, x := range a {
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("%s: not strings", k)
		}
		out[i] = s
	}
	if a == nil {
		return nil, fmt.Errorf("%s: %w", k, errNoKey)
	}
	return out, nil
}
func (m testMeta) Float32s(k string) ([]float32, error) {
	a, _ := m[k].([]any)
	out := make([]float32, len(a))
	for i, x := range a {
		f, ok := x.(float64)
		if !ok {
			return nil, fmt.Errorf("%s: not floats", k)
		}
		out[i] = float32(f)
	}
	return out, nil
}
func (m testMeta) Int32s(k string) ([]int32, error) {
	a, _ := m[k].([]any)
	out := make([]int32, len(a))
	for i, x := range a {
		v, ok := x.(int64)
		if !ok {
			return nil, fmt.Errorf("%s: not ints", k)
		}
		out[i] = int32(v)
	}
	return out, nil
}
