package model

import "fmt"

// Shard returns rank r's part of m as a model of its own: the hyperparameters
// of RankConfig(r), the pass built for them, and every tensor cut as Split
// says, byte for byte from the file's (quantized rows and blocks are never
// re-encoded). A single row span aliases m's data; other cuts are copies.
func (p *TPPlan) Shard(m *Model, r int) (*Model, error) {
	if r < 0 || r >= p.Ranks {
		return nil, fmt.Errorf("model: rank %d of %d", r, p.Ranks)
	}
	s := &Model{Config: p.RankConfig(r), Layers: make([]Layer, len(m.Layers))}
	if s.Arch == nil || s.Arch.Build == nil {
		return nil, fmt.Errorf("model: rank %d: no architecture to build the pass", r)
	}
	s.Graph = s.Arch.Build(&s.Config)
	if err := s.Graph.check(&s.Config); err != nil {
		return nil, fmt.Errorf("model: rank %d: %w", r, err)
	}
	if err := p.shardTensors(&m.Tensors, &s.Tensors, r); err != nil {
		return nil, fmt.Errorf("model: rank %d: %w", r, err)
	}
	if m.Tied() {
		s.Tensors[Output] = s.Tensors[TokEmbd]
	}
	for l := range m.Layers {
		if err := p.shardTensors(&m.Layers[l], &s.Layers[l], r); err != nil {
			return nil, fmt.Errorf("model: rank %d: %w", r, err)
		}
	}
	return s, nil
}

// Check reports the first tensor of m that does not cut for some rank (a
// column span off the quant blocks of its type, a shape that is not the
// plan's), without copying anything.
func (p *TPPlan) Check(m *Model) error {
	for r := range p.Ranks {
		check := func(ts *Tensors) error {
			for id, t := range ts {
				if t == nil {
					continue
				}
				if _, err := cutBytes(t, p.Split(TensorID(id), r)); err != nil {
					return fmt.Errorf("model: rank %d of %d: %w", r, p.Ranks, err)
				}
			}
			return nil
		}
		if err := check(&m.Tensors); err != nil {
			return err
		}
		for l := range m.Layers {
			if err := check(&m.Layers[l]); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *TPPlan) shardTensors(src, dst *Tensors, r int) error {
	for id, t := range src {
		if t == nil {
			continue
		}
		if TensorID(id) == Output && src[Output] == src[TokEmbd] {
			continue // tied: set by the caller to the cut token_embd
		}
		c, err := SliceTensor(t, p.Split(TensorID(id), r))
		if err != nil {
			return err
		}
		dst[id] = c
	}
	return nil
}

// byteRun is one contiguous run of a tensor's data that a cut copies.
type byteRun struct{ off, n int64 }

// cutBytes lists the byte runs of t that the split s keeps, in order,
// checking that every span lies inside the tensor and, for columns, falls
// on whole blocks of t's type.
func cutBytes(t *Tensor, s TensorSplit) ([]byteRun, error) {
	if s.Axis == Replicated {
		return []byteRun{{0, int64(len(t.Data))}}, nil
	}
	if len(t.Dims) < 1 || len(t.Dims) > 2 {
		return nil, fmt.Errorf("tensor %q: %d dimensions: %w", t.Name, len(t.Dims), ErrNoSplit)
	}
	cols, rows := t.Dims[0], int64(t.Rows())
	axis := s.Axis
	if len(t.Dims) == 1 {
		axis = ByCols // a vector's elements are the columns of its one row
	}
	rowBytes, err := t.Type.RowBytes(cols)
	if err != nil {
		return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	var runs []byteRun
	switch axis {
	case ByRows:
		for _, sp := range s.Spans {
			if sp.Lo < 0 || sp.Lo > sp.Hi || int64(sp.Hi) > rows {
				return nil, fmt.Errorf("tensor %q: rows [%d, %d) of %d: %w", t.Name, sp.Lo, sp.Hi, rows, ErrNoSplit)
			}
			runs = append(runs, byteRun{int64(sp.Lo) * rowBytes, int64(sp.Len()) * rowBytes})
		}
	case ByCols:
		bs := int64(t.Type.BlockSize())
		for _, sp := range s.Spans {
			if sp.Lo < 0 || sp.Lo > sp.Hi || int64(sp.Hi) > cols {
				return nil, fmt.Errorf("tensor %q: columns [%d, %d) of %d: %w", t.Name, sp.Lo, sp.Hi, cols, ErrNoSplit)
			}
			if int64(sp.Lo)%bs != 0 || int64(sp.Hi)%bs != 0 {
				return nil, fmt.Errorf("tensor %q (%s): columns [%d, %d) do not fall on whole %d-value quant blocks: %w",
					t.Name, t.Type, sp.Lo, sp.Hi, bs, ErrNoSplit)
			}
		}
		for row := range rows {
			for _, sp := range s.Spans {
				lo, _ := t.Type.RowBytes(int64(sp.Lo))
				n, _ := t.Type.RowBytes(int64(sp.Len()))
				runs = append(runs, byteRun{row*rowBytes + lo, n})
			}
		}
	default:
		return nil, fmt.Errorf("tensor %q: split %v: %w", t.Name, s.Axis, ErrUnsupported)
	}
	if end := rows * rowBytes; end > int64(len(t.Data)) {
		return nil, fmt.Errorf("tensor %q: %d bytes of data, its shape needs %d", t.Name, len(t.Data), end)
	}
	return runs, nil
}

// SliceTensor cuts t as s says: whole rows for a row split, whole quant
// blocks of every row for a column split. The dimensions of the result are
// t's with the split one shrunk to the spans' total.
func SliceTensor(t *Tensor, s TensorSplit) (*Tensor, error) {
	runs, err := cutBytes(t, s)
	if err != nil {
		return nil, err
	}
	out := &Tensor{Name: t.Name, Type: t.Type, Dims: append([]int64(nil), t.Dims...)}
	if s.Axis != Replicated {
		total := 0
		for _, sp := range s.Spans {
			total += sp.Len()
		}
		if s.Axis == ByRows && len(t.Dims) == 2 {
			out.Dims[1] = int64(total)
		} else {
			out.Dims[0] = int64(total)
		}
	}
	if len(runs) == 1 {
		out.Data = t.Data[runs[0].off : runs[0].off+runs[0].n : runs[0].off+runs[0].n]
		return out, nil
	}
	var n int64
	for _, r := range runs {
		n += r.n
	}
	out.Data = make([]byte, 0, n)
	for _, r := range runs {
		out.Data = append(out.Data, t.Data[r.off:r.off+r.n]...)
	}
	return out, nil
}
