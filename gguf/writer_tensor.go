package gguf

import "fmt"

// TensorWriter receives the data of one tensor. The bytes are the tensor's
// rows in order, encoded in its type; they may arrive in any number of
// Write calls, and the tensor is complete when its declared size has been
// written.
type TensorWriter struct {
	w    *Writer
	t    *declaredTensor
	left int64 // bytes still expected
}

// Tensor starts the data of the named tensor, which must be the next one in
// declaration order; the previous tensor must be complete. It writes the
// header first if that has not been done.
func (w *Writer) Tensor(name string) (*TensorWriter, error) {
	if err := w.WriteHeader(); err != nil {
		return nil, err
	}
	if w.closed {
		return nil, w.fail(fmt.Errorf("gguf: tensor %q: writer is closed", name))
	}
	if err := w.finishCurrent(); err != nil {
		return nil, err
	}
	if w.next >= len(w.tensors) {
		if _, ok := w.tensorIndex[name]; ok {
			return nil, w.fail(fmt.Errorf("gguf: tensor %q: written twice", name))
		}
		return nil, w.fail(fmt.Errorf("gguf: tensor %q: not declared", name))
	}
	t := &w.tensors[w.next]
	if t.name != name {
		i, ok := w.tensorIndex[name]
		switch {
		case !ok:
			return nil, w.fail(fmt.Errorf("gguf: tensor %q: not declared", name))
		case i < w.next:
			return nil, w.fail(fmt.Errorf("gguf: tensor %q: written twice", name))
		default:
			return nil, w.fail(fmt.Errorf("gguf: tensor %q: out of order: %q (declared #%d) comes first", name, t.name, w.next))
		}
	}
	w.next++
	w.cur = &TensorWriter{w: w, t: t, left: t.size}
	return w.cur, nil
}

// WriteTensor writes the whole data of the named tensor, which must be the
// next one in declaration order; len(data) must equal its declared size.
func (w *Writer) WriteTensor(name string, data []byte) error {
	tw, err := w.Tensor(name)
	if err != nil {
		return err
	}
	if int64(len(data)) != tw.t.size {
		return w.fail(fmt.Errorf("gguf: tensor %q: %d bytes, want %d for %s %v",
			name, len(data), tw.t.size, tw.t.typ, tw.t.dims))
	}
	_, err = tw.Write(data)
	return err
}

// finishCurrent checks that the tensor being written is complete.
func (w *Writer) finishCurrent() error {
	if w.cur == nil {
		return nil
	}
	tw := w.cur
	w.cur = nil
	if tw.left != 0 {
		return w.fail(fmt.Errorf("gguf: tensor %q: short write: %d of %d bytes",
			tw.t.name, tw.t.size-tw.left, tw.t.size))
	}
	return nil
}

// Write writes the next bytes of the tensor. Writing past the declared size
// is an error and writes nothing. The padding that follows the tensor is
// written when its last byte is.
func (tw *TensorWriter) Write(p []byte) (int, error) {
	w := tw.w
	if w.err != nil {
		return 0, w.err
	}
	if w.cur != tw {
		return 0, w.fail(fmt.Errorf("gguf: tensor %q: write after the tensor was finished", tw.t.name))
	}
	if int64(len(p)) > tw.left {
		return 0, w.fail(fmt.Errorf("gguf: tensor %q: write of %d bytes with %d of %d left",
			tw.t.name, len(p), tw.left, tw.t.size))
	}
	if err := w.write(p); err != nil {
		return 0, err
	}
	tw.left -= int64(len(p))
	if tw.left == 0 {
		if err := w.pad(); err != nil {
			return len(p), err
		}
	}
	return len(p), nil
}

// Size returns the tensor's declared size in bytes.
func (tw *TensorWriter) Size() int64 { return tw.t.size }
