//go:build cuda

package kernels

import (
	"fmt"
	"math"

	"llmserve/internal/cuda"
)

// RopeEpilogue is the rotation and KV cache write of a step's Q/K/V
// product (a RopeStoreOp, or a RopeStorePagedOp for a paged f16 pool), set
// up once per layer so that it can run in the product's own launch
// (MatVecOp.Rope). That takes a rotation with no head norms and a product
// the 8-bit (or 16-bit float) matrix-vector kernels run in one launch: the
// two values a pair rotates (rows 2i and 2i+1 of a head, or with Neox rows
// i and i + Dim/2) are then one row pair of the product. Otherwise
// MatVecFused runs the product and then RopeStore (RopeStorePaged).
type RopeEpilogue struct {
	op    RopeStoreOp       // Q, K and V, and the lengths of Pos and Seq, come from each product; for a pool, its shapes
	paged *RopeStorePagedOp // the pool's op, or nil: the f32 cache of op
	args  *cuda.Buffer      // MVRope (fused.cuh) in device memory; nil where the rotation cannot fuse
}

// NewRopeEpilogue checks op, whose Q, K and V are not used (each product
// gives its own), and copies its parameters to the device where the
// rotation can run inside the product.
func (d *Device) NewRopeEpilogue(op RopeStoreOp) (*RopeEpilogue, error) {
	if err := probeRope(op); err != nil {
		return nil, err
	}
	e := &RopeEpilogue{op: op}
	c := op.Cache
	return e, d.uploadRope(e, mvRope{k: c.K, v: c.V, kvdim: c.KVDim(), ctx: c.Ctx, maxSeqs: c.MaxSeqs})
}

// NewPagedRopeEpilogue is NewRopeEpilogue for a product whose keys and
// values go to the cells of a paged f16 pool, as RopeStorePaged writes
// them.
func (d *Device) NewPagedRopeEpilogue(op RopeStorePagedOp) (*RopeEpilogue, error) {
	p := op.Pool
	if err := p.check("rope epilogue"); err != nil {
		return nil, err
	}
	flat := RopeStoreOp{Cache: DevKVCache{K: p.K, V: p.V, MaxSeqs: p.MaxSeqs, Ctx: p.Ctx(), KVHeads: p.KVHeads, HeadDim: p.HeadDim},
		QNorm: op.QNorm, KNorm: op.KNorm, Eps: op.Eps, Pos: op.Pos, Seq: op.Seq, Rope: op.Rope}
	if err := probeRope(flat); err != nil {
		return nil, err
	}
	e := &RopeEpilogue{op: flat, paged: &op}
	return e, d.uploadRope(e, mvRope{k: p.K, v: p.V, kvdim: p.KVDim(), maxSeqs: p.MaxSeqs,
		tables: p.Tables, tableCols: p.TableCols, blockSize: p.BlockSize, blocks: p.Blocks})
}

// probeRope checks op's shapes with one token's Q, K and V.
func probeRope(op RopeStoreOp) error {
	c, r := op.Cache, op.Rope
	op.Q, op.K, op.V = DevF32{Rows: 1, Cols: r.Heads * r.HeadDim}, DevF32{Rows: 1, Cols: c.KVDim()}, DevF32{Rows: 1, Cols: c.KVDim()}
	op.Pos.Len, op.Seq.Len = 1, 1
	return op.check()
}

// mvRope is where an MVRope (fused.cuh) writes: the f32 cache of k and v
// (ctx positions per slot), or with tables set the paged f16 pool.
type mvRope struct {
	k, v, tables                                      cuda.DevPtr
	kvdim, ctx, maxSeqs, tableCols, blockSize, blocks int
}

// uploadRope copies e's MVRope to the device where its rotation fuses
// (e.args stays nil otherwise): three pointers, headDim, ropeDim, kvdim,
// ctx, maxSeqs and base, then the tables pointer, tableCols, blockSize,
// blocks, neox, mscale and a pad word, 80 bytes. The positions and
// sequences go with each launch.
func (d *Device) uploadRope(e *RopeEpilogue, m mvRope) error {
	op, r := e.op, e.op.Rope
	if op.QNorm.Ptr != 0 || op.KNorm.Ptr != 0 {
		return nil
	}
	words := make([]uint32, 0, 20)
	for _, p := range []cuda.DevPtr{m.k, m.v, r.Factors.Ptr} {
		words = append(words, uint32(p), uint32(uint64(p)>>32))
	}
	words = append(words, uint32(r.HeadDim), uint32(r.Dim), uint32(m.kvdim), uint32(m.ctx), uint32(m.maxSeqs), math.Float32bits(r.Base),
		uint32(m.tables), uint32(uint64(m.tables)>>32), uint32(m.tableCols), uint32(m.blockSize), uint32(m.blocks),
		uint32(boolInt(r.Neox)), math.Float32bits(r.mscale()), 0)
	var err error
	if e.args, err = cuda.Upload(d.ctx, "rope epilogue", words); err != nil {
		return fmt.Errorf("kernels: rope epilogue: %w", err)
	}
	return nil
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
	if p := op.Rope.paged; p != nil {
		ps := *p
		ps.Q, ps.K, ps.V, ps.Pos.Len, ps.Seq.Len = rs.Q, rs.K, rs.V, rs.Pos.Len, rs.Seq.Len
		return d.RopeStorePaged(ps)
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
