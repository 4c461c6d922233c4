//go:build cuda

package kernels

import (
	"fmt"
	"math"

	"llmserve/internal/cuda"
)

// RopeEpilogue is the rotation and KV cache write of a step's Q/K/V
// product (a RopeStoreOp), set up once per layer so that it can run in the
// product's own launch (MatVecOp.Rope). That takes llama's pairwise
// rotation (Neox false) with no head norms, and a product the 8-bit
// kernels run in one launch: rows 2i and 2i+1 of a head are then one row
// pair of the product. Otherwise MatVecFused runs the product and then
// RopeStore.
type RopeEpilogue struct {
	op   RopeStoreOp  // Q, K and V, and the lengths of Pos and Seq, come from each product
	args *cuda.Buffer // MVRope (fused.cuh) in device memory; nil where the rotation cannot fuse
}

// NewRopeEpilogue checks op, whose Q, K and V are not used (each product
// gives its own), and copies its parameters to the device where the
// rotation can run inside the product.
func (d *Device) NewRopeEpilogue(op RopeStoreOp) (*RopeEpilogue, error) {
	c, r := op.Cache, op.Rope
	probe := op
	probe.Q, probe.K, probe.V = DevF32{Rows: 1, Cols: r.Heads * r.HeadDim}, DevF32{Rows: 1, Cols: c.KVDim()}, DevF32{Rows: 1, Cols: c.KVDim()}
	probe.Pos.Len, probe.Seq.Len = 1, 1
	if err := probe.check(); err != nil {
		return nil, err
	}
	e := &RopeEpilogue{op: op}
	if r.Neox || op.QNorm.Ptr != 0 || op.KNorm.Ptr != 0 {
		return e, nil
	}
	// MVRope: three pointers, then headDim, ropeDim, kvdim, ctx, maxSeqs and
	// base, 48 bytes. The positions and sequences go with each launch.
	words := make([]uint32, 0, 12)
	for _, p := range []cuda.DevPtr{c.K, c.V, r.Factors.Ptr} {
		words = append(words, uint32(p), uint32(uint64(p)>>32))
	}
	words = append(words, uint32(r.HeadDim), uint32(r.Dim), uint32(c.KVDim()), uint32(c.Ctx), uint32(c.MaxSeqs), math.Float32bits(r.Base))
	var err error
	if e.args, err = cuda.Upload(d.ctx, "rope epilogue", words); err != nil {
		return nil, fmt.Errorf("kernels: rope epilogue: %w", err)
	}
	return e, nil
}

// Fused says whether the rotation runs inside the products that the 8-bit
// kernels take in one launch.
func (e *RopeEpilogue) Fused() bool { return e.args != nil }

// Free releases the device copy of the parameters.
func (e *RopeEpilogue) Free() error {
	if e.args == nil {
		return nil
	}
	err := e.args.Free()
	e.args = nil
	return err
}

// matVecRope runs op, a Q/K/V product with op.Rope set: in one launch
// where the epilogue fuses, else the product and then RopeStore.
func (d *Device) matVecRope(op MatVecOp) error {
	if len(op.Segs) != 3 || op.GLU || op.Accumulate {
		return fmt.Errorf("kernels: matvec: a rotation follows a Q/K/V product (3 matrices, written), not %d matrices (GLU %v, accumulate %v)",
			len(op.Segs), op.GLU, op.Accumulate)
	}
	rs := op.Rope.op
	rs.Q, rs.K, rs.V = op.Segs[0].Y, op.Segs[1].Y, op.Segs[2].Y
	rs.Pos.Len, rs.Seq.Len = op.X.Rows, op.X.Rows
	if err := rs.check(); err != nil {
		return err
	}
	plain := op
	plain.Rope = nil
	if err := plain.check(); err != nil {
		return err
	}
	if op.Rope.Fused() && d.mvqFits(plain) {
		return d.launchMatVec(op, true)
	}
	if err := d.MatVecFused(plain); err != nil {
		return err
	}
	return d.RopeStore(rs)
}

// StoreOp is the epilogue's RopeStoreOp for the products q, k and v of a
// step of q.Rows tokens, for a product that runs without it (RopeStore).
func (e *RopeEpilogue) StoreOp(q, k, v DevF32) RopeStoreOp {
	rs := e.op
	rs.Q, rs.K, rs.V = q, k, v
	rs.Pos.Len, rs.Seq.Len = q.Rows, q.Rows
	return rs
}
