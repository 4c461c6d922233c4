package gguf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// errTruncated is wrapped by every read that runs past the end of the data.
var errTruncated = errors.New("unexpected end of file")

// maxArrayDepth bounds the nesting of metadata arrays.
const maxArrayDepth = 8

// decoder reads little-endian GGUF primitives from a byte slice, checking
// every length against the bytes that remain.
type decoder struct {
	b   []byte // the whole file
	off int    // next byte to read
}

func (d *decoder) remaining() int { return len(d.b) - d.off }

func (d *decoder) need(n int, what string) error {
	if n < 0 || n > d.remaining() {
		return fmt.Errorf("at byte %d: %s needs %d bytes, %d left: %w", d.off, what, n, d.remaining(), errTruncated)
	}
	return nil
}

func (d *decoder) u8(what string) (uint8, error) {
	if err := d.need(1, what); err != nil {
		return 0, err
	}
	v := d.b[d.off]
	d.off++
	return v, nil
}

func (d *decoder) u16(what string) (uint16, error) {
	if err := d.need(2, what); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint16(d.b[d.off:])
	d.off += 2
	return v, nil
}

func (d *decoder) u32(what string) (uint32, error) {
	if err := d.need(4, what); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint32(d.b[d.off:])
	d.off += 4
	return v, nil
}

func (d *decoder) u64(what string) (uint64, error) {
	if err := d.need(8, what); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint64(d.b[d.off:])
	d.off += 8
	return v, nil
}

// count reads a u64 element count and checks that count elements of at
// least minSize bytes each fit in what remains, so no allocation is ever
// larger than the file.
// noun names the number in errors ("length", "count").
func (d *decoder) count(what, noun string, minSize int) (int, error) {
	at := d.off
	n, err := d.u64(what)
	if err != nil {
		return 0, err
	}
	if n > uint64(d.remaining()/minSize) {
		return 0, fmt.Errorf("at byte %d: %s: %s %d does not fit the %d bytes that remain", at, what, noun, n, d.remaining())
	}
	return int(n), nil
}

func (d *decoder) str(what string) (string, error) {
	n, err := d.count(what, "length", 1)
	if err != nil {
		return "", err
	}
	s := string(d.b[d.off : d.off+n])
	d.off += n
	return s, nil
}

// value reads one metadata value of type t.
func (d *decoder) value(t ValueType, what string, depth int) (Value, error) {
	var v any
	var err error
	switch t {
	case ValueUint8:
		v, err = d.u8(what)
	case ValueInt8:
		var x uint8
		x, err = d.u8(what)
		v = int8(x)
	case ValueUint16:
		v, err = d.u16(what)
	case ValueInt16:
		var x uint16
		x, err = d.u16(what)
		v = int16(x)
	case ValueUint32:
		v, err = d.u32(what)
	case ValueInt32:
		var x uint32
		x, err = d.u32(what)
		v = int32(x)
	case ValueFloat32:
		var x uint32
		x, err = d.u32(what)
		v = math.Float32frombits(x)
	case ValueBool:
		var x uint8
		x, err = d.u8(what)
		if err == nil && x > 1 {
			err = fmt.Errorf("at byte %d: %s: bool byte is %d, not 0 or 1", d.off-1, what, x)
		}
		v = x == 1
	case ValueString:
		v, err = d.str(what)
	case ValueUint64:
		v, err = d.u64(what)
	case ValueInt64:
		var x uint64
		x, err = d.u64(what)
		v = int64(x)
	case ValueFloat64:
		var x uint64
		x, err = d.u64(what)
		v = math.Float64frombits(x)
	case ValueArray:
		v, err = d.array(what, depth)
	default:
		err = fmt.Errorf("at byte %d: %s: unknown value type %d", d.off, what, uint32(t))
	}
	if err != nil {
		return Value{}, err
	}
	return Value{Type: t, V: v}, nil
}

// array reads an array's element type, count and elements.
func (d *decoder) array(what string, depth int) (Array, error) {
	if depth >= maxArrayDepth {
		return Array{}, fmt.Errorf("at byte %d: %s: arrays nested deeper than %d", d.off, what, maxArrayDepth)
	}
	et32, err := d.u32(what + " element type")
	if err != nil {
		return Array{}, err
	}
	et := ValueType(et32)
	minSize := et.scalarSize()
	switch et {
	case ValueString:
		minSize = 8
	case ValueArray:
		minSize = 12
	}
	if minSize == 0 {
		return Array{}, fmt.Errorf("at byte %d: %s: unknown array element type %d", d.off-4, what, et32)
	}
	n, err := d.count(what, "element count", minSize)
	if err != nil {
		return Array{}, err
	}
	a := Array{Type: et}
	switch et {
	case ValueString:
		s := make([]string, n)
		for i := range s {
			if s[i], err = d.str("string length"); err != nil {
				return Array{}, fmt.Errorf("%s[%d]: %w", what, i, err)
			}
		}
		a.Elems = s
	case ValueArray:
		s := make([]Array, n)
		for i := range s {
			if s[i], err = d.array("nested array", depth+1); err != nil {
				return Array{}, fmt.Errorf("%s[%d]: %w", what, i, err)
			}
		}
		a.Elems = s
	default:
		a.Elems = d.scalars(et, n)
	}
	return a, nil
}

// scalars decodes n fixed-size elements whose bytes are known to be present.
func (d *decoder) scalars(t ValueType, n int) any {
	b := d.b[d.off : d.off+n*t.scalarSize()]
	d.off += len(b)
	le := binary.LittleEndian
	switch t {
	case ValueUint8:
		return append([]uint8(nil), b...)
	case ValueInt8:
		s := make([]int8, n)
		for i := range s {
			s[i] = int8(b[i])
		}
		return s
	case ValueBool:
		s := make([]bool, n)
		for i := range s {
			s[i] = b[i] != 0
		}
		return s
	case ValueUint16:
		s := make([]uint16, n)
		for i := range s {
			s[i] = le.Uint16(b[2*i:])
		}
		return s
	case ValueInt16:
		s := make([]int16, n)
		for i := range s {
			s[i] = int16(le.Uint16(b[2*i:]))
		}
		return s
	case ValueUint32:
		s := make([]uint32, n)
		for i := range s {
			s[i] = le.Uint32(b[4*i:])
		}
		return s
	case ValueInt32:
		s := make([]int32, n)
		for i := range s {
			s[i] = int32(le.Uint32(b[4*i:]))
		}
		return s
	case ValueFloat32:
		s := make([]float32, n)
		for i := range s {
			s[i] = math.Float32frombits(le.Uint32(b[4*i:]))
		}
		return s
	case ValueUint64:
		s := make([]uint64, n)
		for i := range s {
			s[i] = le.Uint64(b[8*i:])
		}
		return s
	case ValueInt64:
		s := make([]int64, n)
		for i := range s {
			s[i] = int64(le.Uint64(b[8*i:]))
		}
		return s
	default: // ValueFloat64
		s := make([]float64, n)
		for i := range s {
			s[i] = math.Float64frombits(le.Uint64(b[8*i:]))
		}
		return s
	}
}
