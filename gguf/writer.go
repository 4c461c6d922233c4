package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
)

// maxNameLen is ggml's GGML_MAX_NAME - 1: a file with a longer tensor name
// does not load in llama.cpp.
const maxNameLen = 63

// Writer writes a GGUF version 3 file in one pass, without seeking and
// without holding tensor data.
//
// The caller first declares all metadata (the Set methods) and all tensors
// (AddTensor); the first call to Tensor or WriteTensor writes the header and
// the tensor infos; then each tensor's bytes are written in declaration
// order, in one piece or in chunks. Close checks that every declared tensor
// was written in full and flushes.
//
// The Set methods give a metadata key its value; setting a key again
// replaces the value and keeps the key's position. Keys are written in the
// order they were first set.
//
// A Writer that has failed stays failed: a Set method that is given an
// invalid key or value records the error, and it and every later error are
// returned by each later call that returns an error.
//
// Tensor data is aligned to DefaultAlignment, or to the value given to
// SetUint32("general.alignment", n). Like llama.cpp and gguf-py, the Writer
// writes the general.alignment key only when it was set, since readers take
// its absence to mean DefaultAlignment.
type Writer struct {
	out *bufio.Writer // buffered destination
	n   int64         // bytes written to out so far
	err error         // first failure; sticky

	alignment int64          // general.alignment in effect
	kvs       []encodedKV    // metadata in the order keys were first set
	kvIndex   map[string]int // key → index in kvs

	tensors     []declaredTensor // in declaration order, which is file order
	tensorIndex map[string]int   // name → index in tensors
	dataSize    int64            // data section bytes declared so far, padding included

	headerDone bool          // header and tensor infos are written
	next       int           // index in tensors of the next tensor to start
	cur        *TensorWriter // tensor being written, or nil
	closed     bool
}

// encodedKV is one metadata pair; value holds the value type followed by the
// value, exactly as they are stored in the file.
type encodedKV struct {
	key   string
	value []byte
}

// declaredTensor is a tensor info and where its data goes.
type declaredTensor struct {
	name   string
	typ    Type
	dims   []int64 // ggml order: dims[0] is the row length
	offset int64   // from the start of the data section
	size   int64   // bytes, without padding
}

// NewWriter returns a Writer that writes a GGUF file to w. Close flushes but
// does not close w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{
		out:         bufio.NewWriterSize(w, 1<<20),
		alignment:   DefaultAlignment,
		kvIndex:     map[string]int{},
		tensorIndex: map[string]int{},
	}
}

// fail records err as the Writer's failure unless one is already recorded,
// and returns the recorded one.
func (w *Writer) fail(err error) error {
	if w.err == nil {
		w.err = err
	}
	return w.err
}

// Err returns the Writer's first failure, or nil.
func (w *Writer) Err() error { return w.err }

// AddTensor declares the next tensor: its name, type and dimensions in ggml
// order (dims[0] is the number of values in a row and must be a multiple of
// the type's block size). Tensors are written in the order they are declared.
func (w *Writer) AddTensor(name string, typ Type, dims ...int64) error {
	if w.err != nil {
		return w.err
	}
	if w.headerDone {
		return w.fail(fmt.Errorf("gguf: tensor %q: declared after the header was written", name))
	}
	size, err := tensorSize(name, typ, dims)
	if err != nil {
		return w.fail(err)
	}
	if _, dup := w.tensorIndex[name]; dup {
		return w.fail(fmt.Errorf("gguf: tensor %q: declared twice", name))
	}
	offset := w.dataSize
	end := offset + size
	padded := end + padding(end, w.alignment)
	if end < offset || padded < end {
		return w.fail(fmt.Errorf("gguf: tensor %q: data section larger than 2^63 bytes", name))
	}
	w.dataSize = padded
	w.tensorIndex[name] = len(w.tensors)
	w.tensors = append(w.tensors, declaredTensor{
		name:   name,
		typ:    typ,
		dims:   append([]int64(nil), dims...),
		offset: offset,
		size:   size,
	})
	return nil
}

// tensorSize checks a tensor declaration and returns its data size in bytes.
func tensorSize(name string, typ Type, dims []int64) (int64, error) {
	if name == "" {
		return 0, errors.New("gguf: tensor with an empty name")
	}
	if len(name) > maxNameLen {
		return 0, fmt.Errorf("gguf: tensor %q: name longer than %d bytes", name, maxNameLen)
	}
	if !typ.Known() {
		return 0, fmt.Errorf("gguf: tensor %q: unknown type %d", name, uint32(typ))
	}
	if len(dims) == 0 || len(dims) > MaxDims {
		return 0, fmt.Errorf("gguf: tensor %q: %d dimensions, want 1 to %d", name, len(dims), MaxDims)
	}
	for i, d := range dims {
		if d <= 0 {
			return 0, fmt.Errorf("gguf: tensor %q: dimension %d is %d", name, i, d)
		}
	}
	row, err := typ.RowBytes(dims[0])
	if err != nil {
		return 0, fmt.Errorf("gguf: tensor %q: %w", name, err)
	}
	size := uint64(row)
	for _, d := range dims[1:] {
		hi, lo := bits.Mul64(size, uint64(d))
		if hi != 0 || lo > 1<<62 {
			return 0, fmt.Errorf("gguf: tensor %q: %v %s is too large", name, dims, typ)
		}
		size = lo
	}
	return int64(size), nil
}

// padding returns the bytes needed after off to reach a multiple of a.
func padding(off, a int64) int64 { return (a - off%a) % a }

// WriteHeader writes the header, the metadata and the tensor infos. Tensor
// and WriteTensor call it when it has not been called; after it, no metadata
// or tensor may be added.
func (w *Writer) WriteHeader() error {
	if w.err != nil {
		return w.err
	}
	if w.headerDone {
		return nil
	}
	w.headerDone = true

	var b []byte
	b = binary.LittleEndian.AppendUint32(b, 0x46554747) // "GGUF"
	b = binary.LittleEndian.AppendUint32(b, 3)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(w.tensors)))
	b = binary.LittleEndian.AppendUint64(b, uint64(len(w.kvs)))
	if err := w.write(b); err != nil {
		return err
	}
	for _, kv := range w.kvs {
		b = appendString(b[:0], kv.key)
		b = append(b, kv.value...)
		if err := w.write(b); err != nil {
			return err
		}
	}
	for _, t := range w.tensors {
		b = appendString(b[:0], t.name)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(t.dims)))
		for _, d := range t.dims {
			b = binary.LittleEndian.AppendUint64(b, uint64(d))
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(t.typ))
		b = binary.LittleEndian.AppendUint64(b, uint64(t.offset))
		if err := w.write(b); err != nil {
			return err
		}
	}
	if len(w.tensors) == 0 {
		return nil // a metadata-only file ends here, as llama.cpp's vocab files do
	}
	return w.pad()
}

// write writes b to the destination and counts it.
func (w *Writer) write(b []byte) error {
	n, err := w.out.Write(b)
	w.n += int64(n)
	if err != nil {
		return w.fail(fmt.Errorf("gguf: write: %w", err))
	}
	return nil
}

// zeros is the source of padding bytes; alignments are at most its length.
var zeros [maxAlignment]byte

// pad writes zero bytes up to the next multiple of the alignment.
func (w *Writer) pad() error {
	return w.write(zeros[:padding(w.n, w.alignment)])
}

// Close finishes the file: it writes the header when no tensor was written,
// checks that every declared tensor was written in full and flushes the
// buffered output. It does not close the destination.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	if err := w.WriteHeader(); err != nil {
		return err
	}
	if err := w.finishCurrent(); err != nil {
		return err
	}
	if w.next < len(w.tensors) {
		return w.fail(fmt.Errorf("gguf: closed with %d of %d tensors written; next is %q",
			w.next, len(w.tensors), w.tensors[w.next].name))
	}
	if err := w.out.Flush(); err != nil {
		return w.fail(fmt.Errorf("gguf: write: %w", err))
	}
	return nil
}
