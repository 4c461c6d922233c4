//go:build cuda

package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"llmserve/gguf"
)

// TestRopeEpiloguePaged checks a Q/K/V product whose rotation and cache
// write go to a paged f16 pool (NewPagedRopeEpilogue): fused into the
// product (8-bit kernels, llama's pairwise rotation) or run after it
// (F16 weights, neox rotation, head norms), it must leave the queries and
// the pool's cells bit for bit as the product followed by RopeStorePaged
// does, over scattered block tables, with a padding token and a token
// outside its slot's table writing nothing.
func TestRopeEpiloguePaged(t *testing.T) {
	cases := []struct {
		typ          gguf.Type
		headDim, dim int
		neox, norm   bool
		fusable      bool
	}{
		{gguf.TypeQ4_K, 64, 64, false, false, true},
		{gguf.TypeQ6_K, 128, 128, false, false, true},
		{gguf.TypeQ8_0, 128, 64, false, false, true},
		{gguf.TypeF16, 64, 64, false, false, true}, // fusable, but F16 products run apart
		{gguf.TypeQ4_K, 128, 64, true, false, true},
		{gguf.TypeQ4_K, 128, 128, true, true, false},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%v_hd%d_dim%d_neox%v_norm%v", c.typ, c.headDim, c.dim, c.neox, c.norm), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(9, uint64(c.headDim+c.dim)+uint64(c.typ)))
			g := newBuffers(t)
			const heads, kvHeads, cols, bs = 4, 2, 512, 16
			l := KVPoolLayout{MaxSeqs: 2, TableCols: 64, BlockSize: bs, Blocks: 2*64 + 5, KVHeads: kvHeads, HeadDim: c.headDim, Elem: KVPoolF16}
			tables := make([]int32, l.TableLen())
			perm := rng.Perm(l.Blocks)
			for i := range tables {
				tables[i] = int32(perm[i])
			}
			tables[1*l.TableCols+2] = -1 // slot 1's third block is not in the pool
			// Slot 0 at 3, slot 1 at 1000, padding, slot 1 at 40 (outside its table).
			pos := []int32{3, 1000, 17, 40}
			seq := []int32{0, 1, -1, 1}
			B, qDim, kvDim := len(pos), heads*c.headDim, l.KVDim()
			st := newRopeStep(g, rng, c.typ, B, kvHeads, cols, RopeParams{Heads: heads, HeadDim: c.headDim, Dim: c.dim, Base: 500000, Neox: c.neox}, false, c.norm)
			r, qn, kn := st.rope, st.qn, st.kn
			pd, sd, td := g.i32(pos), g.i32(seq), g.i32(tables)
			cells := l.Cells() * kvDim
			run := func(fuse bool) (outQ []float32, outK, outV []uint16) {
				q, k, v := g.poisoned(B, qDim), g.poisoned(B, kvDim), g.poisoned(B, kvDim)
				kb, vb := g.halves(cells, 0x7e00), g.halves(cells, 0x7e00)
				pool := DevKVPool{KVPoolLayout: l, K: kb, V: vb, Tables: td.Ptr}
				ps := RopeStorePagedOp{Pool: pool, QNorm: qn, KNorm: kn, Eps: 1e-6, Pos: pd, Seq: sd, Rope: r}
				var e *RopeEpilogue
				if fuse {
					e = keepEpilogue(t)(dev.NewPagedRopeEpilogue(ps))
				}
				st.run(t, q, k, v, e, c.fusable, func() error {
					ps.Q, ps.K, ps.V = q, k, v
					return dev.RopeStorePaged(ps)
				})
				return read(t, q), readHalves(t, kb, cells), readHalves(t, vb, cells)
			}
			wantQ, wantK, wantV := run(false)
			gotQ, gotK, gotV := run(true)
			if n := bitsDiffer32(gotQ, wantQ); n != 0 {
				t.Errorf("%d of %d query values differ", n, len(wantQ))
			}
			for name, pair := range map[string][2][]uint16{"K": {gotK, wantK}, "V": {gotV, wantV}} {
				got, want := pair[0], pair[1]
				written, differ := 0, 0
				for i := range want {
					if got[i] != want[i] {
						differ++
					}
					if want[i] != 0x7e00 {
						written++
					}
				}
				if differ != 0 {
					t.Errorf("pool %s: %d of %d halves differ", name, differ, len(want))
				}
				if want := 2 * kvDim; written != want { // slot 0 at 3 and slot 1 at 1000 only
					t.Errorf("pool %s: %d values written, want %d (padding and a position outside the table write nothing)", name, written, want)
				}
			}
		})
	}
}
