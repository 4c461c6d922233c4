package gguf

import (
	"cmp"
	"errors"
	"fmt"
	"math/bits"
	"slices"
)

// Magic is the first four bytes of every GGUF file ("GGUF").
const Magic = "GGUF"

// DefaultAlignment is the tensor data alignment when general.alignment is absent.
const DefaultAlignment = 32

// MaxDims is the largest number of dimensions a tensor may have (ggml's limit).
const MaxDims = 4

// File is a parsed GGUF file. Its tensor data aliases the bytes it was
// parsed from (for Open, a read-only memory map).
type File struct {
	Version    uint32
	KV         []KV         // metadata in file order
	Tensors    []TensorInfo // tensor infos in file order
	Alignment  int64        // general.alignment, or DefaultAlignment
	DataOffset int64        // start of the tensor data section in the file

	data    []byte         // the whole file
	keys    map[string]int // metadata key -> index in KV
	tensors map[string]int // tensor name -> index in Tensors
	unmap   func() error   // releases data; nil when the caller owns it
}

// TensorInfo describes one tensor.
type TensorInfo struct {
	Name   string
	Dims   []int64 // ggml order: Dims[0] is the contiguous row length (ne0)
	Type   Type
	Offset int64 // from the start of the tensor data section
	Size   int64 // bytes
}

// Elements is the number of values in the tensor.
func (t *TensorInfo) Elements() int64 {
	n := int64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// Rows is the number of rows of Dims[0] values.
func (t *TensorInfo) Rows() int64 {
	if len(t.Dims) == 0 || t.Dims[0] == 0 {
		return 0
	}
	return t.Elements() / t.Dims[0]
}

// Parse parses a GGUF file held in data. The File aliases data: tensor
// bytes are not copied.
func Parse(data []byte) (*File, error) {
	f, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	return f, nil
}

func parse(data []byte) (*File, error) {
	d := &decoder{b: data}
	if err := d.need(4, "magic"); err != nil {
		return nil, err
	}
	if string(data[:4]) != Magic {
		return nil, fmt.Errorf("bad magic %q: not a GGUF file", data[:4])
	}
	d.off = 4
	f := &File{data: data, Alignment: DefaultAlignment}
	var err error
	if f.Version, err = d.u32("version"); err != nil {
		return nil, err
	}
	if f.Version != 2 && f.Version != 3 {
		return nil, fmt.Errorf("unsupported GGUF version %d (2 and 3 are supported)", f.Version)
	}
	// A tensor info takes at least 8+4+8+4+8 bytes and a metadata entry 8+4+1.
	nTensors, err := d.count("header", "tensor count", 32)
	if err != nil {
		return nil, err
	}
	nKV, err := d.count("header", "metadata count", 13)
	if err != nil {
		return nil, err
	}
	if err := f.readMetadata(d, nKV); err != nil {
		return nil, err
	}
	if err := f.readTensorInfos(d, nTensors); err != nil {
		return nil, err
	}
	f.DataOffset = alignUp(int64(d.off), f.Alignment)
	if err := f.checkTensorData(); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *File) readMetadata(d *decoder, n int) error {
	f.KV = make([]KV, 0, n)
	f.keys = make(map[string]int, n)
	for i := 0; i < n; i++ {
		at := d.off
		key, err := d.str(fmt.Sprintf("metadata entry %d key", i))
		if err != nil {
			return err
		}
		if _, dup := f.keys[key]; dup {
			return fmt.Errorf("at byte %d: duplicate metadata key %q", at, key)
		}
		t, err := d.u32(fmt.Sprintf("metadata %q type", key))
		if err != nil {
			return err
		}
		v, err := d.value(ValueType(t), fmt.Sprintf("metadata %q", key), 0)
		if err != nil {
			return err
		}
		f.keys[key] = len(f.KV)
		f.KV = append(f.KV, KV{Key: key, Value: v})
	}
	if _, ok := f.keys["general.alignment"]; ok {
		a, err := f.Uint32("general.alignment")
		if err != nil {
			return err
		}
		if a == 0 || a&(a-1) != 0 {
			return fmt.Errorf("general.alignment %d is not a power of two", a)
		}
		if a > maxAlignment {
			return fmt.Errorf("general.alignment %d is larger than %d", a, maxAlignment)
		}
		f.Alignment = int64(a)
	}
	return nil
}

func (f *File) readTensorInfos(d *decoder, n int) error {
	f.Tensors = make([]TensorInfo, 0, n)
	f.tensors = make(map[string]int, n)
	for i := 0; i < n; i++ {
		at := d.off
		ti, err := readTensorInfo(d, i)
		if err != nil {
			return err
		}
		if _, dup := f.tensors[ti.Name]; dup {
			return fmt.Errorf("at byte %d: duplicate tensor name %q", at, ti.Name)
		}
		if ti.Offset%f.Alignment != 0 {
			return fmt.Errorf("tensor %q: data offset %d is not aligned to %d", ti.Name, ti.Offset, f.Alignment)
		}
		f.tensors[ti.Name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, ti)
	}
	return nil
}

func readTensorInfo(d *decoder, i int) (TensorInfo, error) {
	name, err := d.str(fmt.Sprintf("tensor %d name", i))
	if err != nil {
		return TensorInfo{}, err
	}
	ti := TensorInfo{Name: name}
	nd, err := d.u32(fmt.Sprintf("tensor %q dimension count", name))
	if err != nil {
		return TensorInfo{}, err
	}
	if nd == 0 || nd > MaxDims {
		return TensorInfo{}, fmt.Errorf("at byte %d: tensor %q has %d dimensions (1 to %d allowed)", d.off-4, name, nd, MaxDims)
	}
	ti.Dims = make([]int64, nd)
	elems := uint64(1)
	for j := range ti.Dims {
		v, err := d.u64(fmt.Sprintf("tensor %q dimension %d", name, j))
		if err != nil {
			return TensorInfo{}, err
		}
		hi, lo := bits.Mul64(elems, v)
		if hi != 0 || lo > 1<<62 {
			return TensorInfo{}, fmt.Errorf("tensor %q: dimensions %v... overflow", name, ti.Dims[:j+1])
		}
		elems = lo
		ti.Dims[j] = int64(v)
	}
	t, err := d.u32(fmt.Sprintf("tensor %q type", name))
	if err != nil {
		return TensorInfo{}, err
	}
	ti.Type = Type(t)
	if !ti.Type.Known() {
		return TensorInfo{}, fmt.Errorf("tensor %q: unknown tensor type %d", name, t)
	}
	if ti.Dims[0]%int64(ti.Type.BlockSize()) != 0 {
		return TensorInfo{}, fmt.Errorf("tensor %q: row length %d is not a multiple of the %s block size %d", name, ti.Dims[0], ti.Type, ti.Type.BlockSize())
	}
	if ti.Size, err = ti.Type.RowBytes(int64(elems)); err != nil {
		return TensorInfo{}, fmt.Errorf("tensor %q: %w", name, err)
	}
	off, err := d.u64(fmt.Sprintf("tensor %q offset", name))
	if err != nil {
		return TensorInfo{}, err
	}
	if off > 1<<62 {
		return TensorInfo{}, fmt.Errorf("tensor %q: data offset %d is out of range", name, off)
	}
	ti.Offset = int64(off)
	return ti, nil
}

// checkTensorData checks that every tensor's bytes lie inside the file and
// that no two tensors share bytes.
func (f *File) checkTensorData() error {
	if len(f.Tensors) == 0 {
		return nil
	}
	avail := int64(len(f.data)) - f.DataOffset
	if avail < 0 {
		return fmt.Errorf("tensor data section starts at byte %d, past the end of the %d-byte file: %w", f.DataOffset, len(f.data), errTruncated)
	}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if t.Offset > avail || t.Size > avail-t.Offset {
			return fmt.Errorf("tensor %q: data [%d, %d) lies outside the %d-byte data section: %w", t.Name, t.Offset, t.Offset+t.Size, avail, errTruncated)
		}
	}
	return f.checkOverlap()
}

// checkOverlap reports two tensors whose data ranges intersect. Empty
// tensors occupy nothing and may sit anywhere.
func (f *File) checkOverlap() error {
	order := make([]int, 0, len(f.Tensors))
	for i := range f.Tensors {
		if f.Tensors[i].Size > 0 {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(f.Tensors[a].Offset, f.Tensors[b].Offset) })
	for k := 1; k < len(order); k++ {
		prev, t := &f.Tensors[order[k-1]], &f.Tensors[order[k]]
		if t.Offset < prev.Offset+prev.Size {
			return fmt.Errorf("tensor %q: data [%d, %d) overlaps tensor %q at [%d, %d)",
				t.Name, t.Offset, t.Offset+t.Size, prev.Name, prev.Offset, prev.Offset+prev.Size)
		}
	}
	return nil
}

func alignUp(off, a int64) int64 { return off + (a-off%a)%a }

// Close releases the file's memory map, if it has one. Tensor data slices
// must not be used after Close.
func (f *File) Close() error {
	if f.unmap == nil {
		return nil
	}
	err := f.unmap()
	f.unmap, f.data = nil, nil
	return err
}

// Tensor returns the info of the named tensor.
func (f *File) Tensor(name string) (*TensorInfo, bool) {
	i, ok := f.tensors[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// TensorData returns the bytes of t inside the file's data.
func (f *File) TensorData(t *TensorInfo) []byte {
	start := f.DataOffset + t.Offset
	return f.data[start : start+t.Size : start+t.Size]
}

// Size is the length of the file in bytes.
func (f *File) Size() int64 { return int64(len(f.data)) }

// IsTruncated reports whether err says the file ended too early.
func IsTruncated(err error) bool { return errors.Is(err, errTruncated) }
