//go:build cuda

package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"llmserve/gguf"
	"llmserve/internal/cuda"
)

// pagedBound is the NMSE the paged f16 kernels may reach against the f64
// reference over the unrounded values: an f16 cache rounds each value by
// at most 2⁻¹¹ relative, an NMSE near 2e-7 on random data (K and V); the bound
// leaves a factor of ten or more.
const pagedBound = 3e-6

// pagedSame is the NMSE within which a paged f16 kernel matches the f32
// kernel over the same (f16-rounded) values: only the order of f32 sums
// may differ.
const pagedSame = 1e-10

// pagedFixture is a paged pool of four sequences of 1..3 blocks and
// partial ones, filled by KVStorePaged from rows k and v, beside the
// per-slot f32 cache holding the same values rounded to f16 (the f32
// kernels' input) and the unrounded values (the reference's).
type pagedFixture struct {
	pool       DevKVPool
	flat       DevKVCache
	tables     []int32
	lens       []int
	kRaw, vRaw []float32 // [maxSeqs][ctx][kvdim] unrounded, zeros past a sequence
	kbuf, vbuf cuda.DevPtr
}

// pagedLengths are the sequence lengths for blocks of bs cells: one
// partial block, one full block, two full blocks, three and a partial one.
func pagedLengths(bs int) []int { return []int{max(bs-3, 1), bs, 2 * bs, 3*bs + bs/2 + 1} }

func newPagedFixture(t *testing.T, g *gpuBuffers, rng *rand.Rand, kvHeads, headDim, bs int) pagedFixture {
	t.Helper()
	lens := pagedLengths(bs)
	const cols = 4
	l := KVPoolLayout{MaxSeqs: len(lens), TableCols: cols, BlockSize: bs, Blocks: len(lens)*cols + 3, KVHeads: kvHeads, HeadDim: headDim, Elem: KVPoolF16}
	kvdim, ctx := l.KVDim(), l.Ctx()
	tables := make([]int32, l.TableLen())
	perm := rng.Perm(l.Blocks)
	for i := range tables {
		tables[i] = -1
	}
	var seq, pos []int32
	for s, n := range lens {
		for j := 0; j < (n+bs-1)/bs; j++ {
			tables[s*cols+j] = int32(perm[s*cols+j])
		}
		for p := 0; p < n; p++ {
			seq, pos = append(seq, int32(s)), append(pos, int32(p))
		}
	}
	B := len(seq)
	k, v := randF32(rng, B*kvdim), randF32(rng, B*kvdim)
	kRaw, vRaw := make([]float32, l.MaxSeqs*ctx*kvdim), make([]float32, l.MaxSeqs*ctx*kvdim)
	kr, vr := make([]float32, len(kRaw)), make([]float32, len(vRaw))
	for b := range seq {
		at := (int(seq[b])*ctx + int(pos[b])) * kvdim
		copy(kRaw[at:at+kvdim], k[b*kvdim:])
		copy(vRaw[at:at+kvdim], v[b*kvdim:])
		for i := 0; i < kvdim; i++ {
			kr[at+i] = roundHalf(k[b*kvdim+i])
			vr[at+i] = roundHalf(v[b*kvdim+i])
		}
	}
	kb, vb := g.halves(l.Cells()*kvdim, 0x7e00), g.halves(l.Cells()*kvdim, 0x7e00) // NaN: cells no sequence names
	pool := DevKVPool{KVPoolLayout: l, K: kb, V: vb, Tables: g.i32(tables).Ptr}
	if err := dev.KVStorePaged(pool, g.f32(k, B, kvdim), g.f32(v, B, kvdim), g.i32(pos), g.i32(seq)); err != nil {
		t.Fatal(err)
	}
	fk, fv := g.f32(kr, l.MaxSeqs*ctx, kvdim), g.f32(vr, l.MaxSeqs*ctx, kvdim)
	flat := DevKVCache{K: fk.Ptr, V: fv.Ptr, MaxSeqs: l.MaxSeqs, Ctx: ctx, KVHeads: kvHeads, HeadDim: headDim}
	return pagedFixture{pool: pool, flat: flat, tables: tables, lens: lens, kRaw: kRaw, vRaw: vRaw, kbuf: kb, vbuf: vb}
}

// roundHalf is v rounded to the nearest f16, as the kernels store it.
func roundHalf(v float32) float32 { return gguf.FP16ToFP32(gguf.FP32ToFP16(v)) }

// halves allocates n f16 values, each fill.
func (g *gpuBuffers) halves(n int, fill uint16) cuda.DevPtr {
	g.t.Helper()
	v := make([]uint16, n)
	for i := range v {
		v[i] = fill
	}
	b, err := cuda.Upload(dev.Context(), "test f16", v)
	if err != nil {
		g.t.Fatal(err)
	}
	g.bufs = append(g.bufs, b)
	return b.Ptr()
}

func readHalves(t *testing.T, p cuda.DevPtr, n int) []uint16 {
	t.Helper()
	if err := dev.Sync(); err != nil {
		t.Fatal(err)
	}
	out := make([]uint16, n)
	if err := readPtr(p, cuda.AsBytes(out)); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkPool checks that every cell a table names holds the f16 of the
// sequence's value (bit for bit) and that every other cell still holds
// the fill: no write lands outside the cells the tables name.
func (f pagedFixture) checkPool(t *testing.T) {
	t.Helper()
	l := f.pool.KVPoolLayout
	kvdim, ctx := l.KVDim(), l.Ctx()
	owner := make([]int, l.Cells()) // 1 + slot·ctx + position of each named cell, 0 if none
	for s, n := range f.lens {
		for p := 0; p < n; p++ {
			owner[l.CellOffset(f.tables, s, p)] = 1 + s*ctx + p
		}
	}
	for name, pair := range map[string]struct {
		dev cuda.DevPtr
		raw []float32
	}{"K": {f.kbuf, f.kRaw}, "V": {f.vbuf, f.vRaw}} {
		got := readHalves(t, pair.dev, l.Cells()*kvdim)
		bad := 0
		for c, o := range owner {
			for i := 0; i < kvdim; i++ {
				want := uint16(0x7e00)
				if o > 0 {
					want = gguf.FP32ToFP16(pair.raw[(o-1)*kvdim+i])
				}
				if got[c*kvdim+i] != want && bad < 5 {
					t.Errorf("%s cell %d (owner %d) value %d: %#04x, want %#04x", name, c, o-1, i, got[c*kvdim+i], want)
					bad++
				}
			}
		}
	}
}

// TestGPUPagedKV checks the paged f16 pool's kernels (kv.cuh) on random
// caches: KVStorePaged writes exactly the f16 of each row to the cell the
// table names and nothing else; AttentionPaged (decode, split over the KV
// length) and AttentionPrefillPaged match the f32 kernels over the same
// f16-rounded values (NMSE ≤ pagedSame for the decode, prefillBound for
// the prefill, whose f16 operands are the same) and the f64 reference
// over the unrounded values within pagedBound; for blocks of 16, 32 and
// 64 cells, sequences of a partial block, 1, 2 and 3 blocks and a
// partial one, queries at block boundaries, a padding row, heads of 64,
// 128 and 256 values and groups of 1, 4 and 8 query heads per KV head.
func TestGPUPagedKV(t *testing.T) {
	cases := []struct{ heads, kvHeads, headDim, bs int }{
		{8, 2, 64, 16},
		{32, 8, 128, 16},
		{8, 1, 128, 32},
		{4, 4, 64, 64},
		{16, 2, 256, 16},
		{28, 4, 128, 16},   // groups of 7 (attention_vec_pf16_8x1)
		{32, 32, 96, 16},   // heads of 96 values, one query head per KV head
		{16, 8, 256, 16},   // attention_vec_pf16_2x2
		{12, 4, 256, 64},   // groups of 3 in attention_vec_pf16_4x2
		{32, 8, 128, 1024}, // 3585 positions: splits of two tiles, the last partial
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("h%d_kv%d_d%d_bs%d", c.heads, c.kvHeads, c.headDim, c.bs), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(18, uint64(c.headDim*c.heads+c.bs)))
			g := newBuffers(t)
			f := newPagedFixture(t, g, rng, c.kvHeads, c.headDim, c.bs)
			f.checkPool(t)
			l := f.pool.KVPoolLayout
			hd, ctx := c.headDim, l.Ctx()

			// Decode rows: each sequence's last position, the last cell of its
			// first block and the first of its second, position 0, padding.
			var seq, pos []int32
			for s, n := range f.lens {
				for _, p := range []int{n - 1, c.bs - 1, c.bs, 0} {
					if p < n {
						seq, pos = append(seq, int32(s)), append(pos, int32(p))
					}
				}
			}
			seq, pos = append(seq, -1), append(pos, 0)
			B := len(seq)
			q := randF32(rng, B*c.heads*hd)
			qd, pd, sd := g.f32(q, B, c.heads*hd), g.i32(pos), g.i32(seq)
			// The kernels that write every split (LLMSERVE_ATTENTION_VEC_MIN=0),
			// against which the default _used twins are checked below.
			paged := g.poisoned(B, c.heads*hd)
			wasMin := dev.attVecMin
			dev.attVecMin = 0
			err := dev.AttentionPaged(f.pool, qd, paged, c.heads, pd, sd, g.poisoned(1, AttentionPagedScratch(l, B, c.heads)))
			dev.attVecMin = wasMin
			if err != nil {
				t.Fatal(err)
			}
			flat := g.poisoned(B, c.heads*hd)
			if err := dev.Attention(f.flat, qd, flat, c.heads, pd, sd, g.poisoned(1, AttentionScratch(f.flat, B, c.heads))); err != nil {
				t.Fatal(err)
			}
			got, ref := read(t, paged), read(t, flat)
			checkNMSE(t, "decode, paged f16 against f32", got, to64(ref), pagedSame)
			// attention_part_pf16 where attention_vec_pf16 has an instance: the
			// same values within the order of the sums.
			if v, ok := attentionVecFor(c.heads/c.kvHeads, hd); ok {
				part := g.poisoned(B, c.heads*hd)
				was := dev.attVec
				dev.attVec = false
				err := dev.AttentionPaged(f.pool, qd, part, c.heads, pd, sd, g.poisoned(1, AttentionPagedScratch(l, B, c.heads)))
				dev.attVec = was
				if err != nil {
					t.Fatal(err)
				}
				checkNMSE(t, v.name()+" against attention_part_pf16", got, to64(read(t, part)), pagedSame)
				// The _used twins (the default; LLMSERVE_ATTENTION_VEC_MIN)
				// over a poisoned scratch: the merge reads only the splits
				// they write (a read of another gives NaN); with the default
				// minimum (32) the same bits as the kernels that write every
				// split, with others the same values within the order of the
				// sums.
				for _, minPer := range []int{32, 8, 100} {
					used := g.poisoned(B, c.heads*hd)
					was := dev.attVecMin
					dev.attVecMin = minPer
					err := dev.AttentionPaged(f.pool, qd, used, c.heads, pd, sd, g.poisoned(1, AttentionPagedScratch(l, B, c.heads)))
					dev.attVecMin = was
					if err != nil {
						t.Fatal(err)
					}
					u := read(t, used)
					if minPer == 32 {
						n := 0
						for i := range u {
							if math.Float32bits(u[i]) != math.Float32bits(got[i]) {
								n++
							}
						}
						if n != 0 {
							t.Errorf("%s_used, splits of 32 positions at least: %d values differ from %s", v.name(), n, v.name())
						}
					}
					checkNMSE(t, fmt.Sprintf("%s_used (min %d) against %s", v.name(), minPer, v.name()), u, to64(got), pagedSame)
				}
			}
			// The architectures' attention (gemma2, phi3): another logit
			// scale, soft-capped logits and windows shorter than a block,
			// across a block boundary and longer than any sequence, against
			// the f32 kernel with the same parameters over the same values.
			// On attention_vec_pf16's _arch twin where an instance fits, and
			// on attention_part_pf16.
			for _, a := range []struct {
				scale, cap float32
				window     int
			}{{0.3, 5, 0}, {0.125, 0, 7}, {0.25, 2.5, c.bs + 3}, {0.2, 0, 5000}} {
				fa := g.poisoned(B, c.heads*hd)
				if err := dev.AttentionArch(AttentionArchOp{Cache: f.flat, Q: qd, Out: fa, Heads: c.heads, Pos: pd, Seq: sd,
					Scratch: g.poisoned(1, AttentionScratch(f.flat, B, c.heads)), Scale: a.scale, Cap: a.cap, Window: a.window}); err != nil {
					t.Fatal(err)
				}
				for _, vec := range []bool{true, false} {
					arch := g.poisoned(B, c.heads*hd)
					was, wasPre := dev.attVec, dev.preview
					dev.attVec, dev.preview = vec, false // the _arch twin, whatever the environment
					err := dev.AttentionPagedArch(AttentionPagedOp{Pool: f.pool, Q: qd, Out: arch, Heads: c.heads, Pos: pd, Seq: sd,
						Scratch: g.poisoned(1, AttentionPagedScratch(l, B, c.heads)), Scale: a.scale, Cap: a.cap, Window: a.window})
					dev.attVec, dev.preview = was, wasPre
					if err != nil {
						t.Fatal(err)
					}
					checkNMSE(t, fmt.Sprintf("arch decode (scale %g, cap %g, window %d, vec %v), paged f16 against f32", a.scale, a.cap, a.window, vec),
						read(t, arch), to64(read(t, fa)), pagedSame)
					if !vec {
						continue
					}
					if _, ok := attentionVecFor(c.heads/c.kvHeads, hd); !ok {
						continue
					}
					// The _arch_used twins (LLMSERVE_GPU_PREVIEW=1) over a
					// poisoned scratch: at the default minimum the bits of
					// the _arch twin, at 8 and 100 its values.
					want := read(t, arch)
					for _, minPer := range []int{32, 8, 100} {
						used := g.poisoned(B, c.heads*hd)
						wasMin, wasPre := dev.attVecMin, dev.preview
						dev.attVecMin, dev.preview = minPer, true
						err := dev.AttentionPagedArch(AttentionPagedOp{Pool: f.pool, Q: qd, Out: used, Heads: c.heads, Pos: pd, Seq: sd,
							Scratch: g.poisoned(1, AttentionPagedScratch(l, B, c.heads)), Scale: a.scale, Cap: a.cap, Window: a.window})
						dev.attVecMin, dev.preview = wasMin, wasPre
						if err != nil {
							t.Fatal(err)
						}
						u := read(t, used)
						name := fmt.Sprintf("arch decode (scale %g, cap %g, window %d), _arch_used min %d", a.scale, a.cap, a.window, minPer)
						if minPer == 32 {
							if n := bitsDiffer32(u, want); n != 0 {
								t.Errorf("%s: %d values differ from the _arch twin", name, n)
							}
						}
						checkNMSE(t, name+" against the _arch twin", u, to64(want), pagedSame)
					}
				}
			}
			if err := dev.AttentionPagedArch(AttentionPagedOp{Pool: f.pool, Q: qd, Out: paged, Heads: c.heads, Pos: pd, Seq: sd,
				Scratch: g.poisoned(1, AttentionPagedScratch(l, B, c.heads)), Scale: 0.3, Window: -1}); err == nil {
				t.Error("AttentionPagedArch took a window of -1")
			}
			want := refCausalAttention(q, f.kRaw, f.vRaw, seq, pos, c.heads, c.kvHeads, hd, ctx, runtime.NumCPU())
			for i := range want {
				if math.IsNaN(want[i]) {
					want[i] = 0 // padding rows: Attention writes zeros
				}
			}
			e := gpuNMSE(got, want)
			if e > pagedBound {
				t.Errorf("decode, paged f16 against the f64 reference: NMSE %.3g > %g", e, pagedBound)
			}

			// Prefill: every sequence from position 0, and a chunk of the
			// longest continuing from inside its second block.
			segs := []prefillSegment{{3, c.bs + 3, c.bs + 2}}
			for s, n := range f.lens {
				segs = append(segs, prefillSegment{s, 0, n})
			}
			pseq, ppos := prefillBatch(segs)
			PB := len(pseq)
			pq := randF32(rng, PB*c.heads*hd)
			words, maxRows := PrefillTileTable(PrefillTiles(pseq, ppos, PrefillTileRows))
			tiles := g.i32(words).Ptr
			pqd := g.f32(pq, PB, c.heads*hd)
			pout, fout := g.poisoned(PB, c.heads*hd), g.poisoned(PB, c.heads*hd)
			if err := dev.AttentionPrefillPaged(AttentionPrefillPagedOp{Pool: f.pool, Q: pqd, Out: pout, Heads: c.heads, Tiles: tiles, NumTiles: len(words) / 4, MaxRows: maxRows}); err != nil {
				t.Fatal(err)
			}
			if err := dev.AttentionPrefill(AttentionPrefillOp{Cache: f.flat, Q: pqd, Out: fout, Heads: c.heads, Tiles: tiles, NumTiles: len(words) / 4, MaxRows: maxRows}); err != nil {
				t.Fatal(err)
			}
			pgot, fgot := read(t, pout), read(t, fout)
			checkNMSE(t, "prefill, paged f16 against f32", pgot, to64(fgot), pagedSame)
			// The architectures' scores: the same kernel body, so the f32
			// cache's values within the order of the sums.
			if PrefillSupports(hd) {
				sc := PrefillScores{Scale: 0.2, Cap: 4, Window: c.bs + 5}
				pa, fa := g.poisoned(PB, c.heads*hd), g.poisoned(PB, c.heads*hd)
				if err := dev.AttentionPrefillPaged(AttentionPrefillPagedOp{Pool: f.pool, Q: pqd, Out: pa, Heads: c.heads, Tiles: tiles, NumTiles: len(words) / 4, MaxRows: maxRows, Scores: sc}); err != nil {
					t.Fatal(err)
				}
				if err := dev.AttentionPrefill(AttentionPrefillOp{Cache: f.flat, Q: pqd, Out: fa, Heads: c.heads, Tiles: tiles, NumTiles: len(words) / 4, MaxRows: maxRows, Scores: sc}); err != nil {
					t.Fatal(err)
				}
				checkNMSE(t, fmt.Sprintf("prefill with scores %+v, paged f16 against f32", sc), read(t, pa), to64(read(t, fa)), pagedSame)
			}
			pwant := refCausalAttention(pq, f.kRaw, f.vRaw, pseq, ppos, c.heads, c.kvHeads, hd, ctx, runtime.NumCPU())
			if e, touched := comparePrefill(pgot, pwant); e > prefillBound || touched > 0 {
				t.Errorf("prefill, paged f16 against the f64 reference: NMSE %.3g > %g, %d values of uncovered rows written", e, prefillBound, touched)
			}
			t.Logf("decode NMSE %.3g against the reference; prefill %.3g", e, gpuNMSE(pgot, pwant))
		})
	}
}

// TestGPURopeStorePaged checks RopeStorePaged against RopeStore on the
// same step (neox or pairwise rotation, with and without head norms):
// the queries alike (NMSE ≤ pagedSame), each token's cells holding its
// rotated key and its value within f16 rounding (NMSE ≤ 1e-6 against the
// f32 cache's rows), padding writing nothing and every cell the step's
// tokens do not own left as it was.
func TestGPURopeStorePaged(t *testing.T) {
	for _, c := range []struct {
		headDim, bs int
		neox, norm  bool
	}{{64, 16, false, false}, {128, 32, true, true}, {128, 16, false, true}} {
		t.Run(fmt.Sprintf("d%d_bs%d_neox%v_norm%v", c.headDim, c.bs, c.neox, c.norm), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(21, uint64(c.headDim+c.bs)))
			g := newBuffers(t)
			const heads, kvHeads = 8, 2
			f := newPagedFixture(t, g, rng, kvHeads, c.headDim, c.bs)
			l := f.pool.KVPoolLayout
			kvdim, ctx := l.KVDim(), l.Ctx()
			// The step: a block's last and the next block's first cell, the
			// last cell of sequence 3, and padding.
			seq := []int32{1, 2, 2, 3, -1}
			pos := []int32{int32(c.bs - 1), int32(c.bs - 1), int32(c.bs), int32(f.lens[3] - 1), 5}
			B := len(seq)
			q, k, v := randF32(rng, B*heads*c.headDim), randF32(rng, B*kvdim), randF32(rng, B*kvdim)
			r := RopeParams{Heads: heads, HeadDim: c.headDim, Dim: c.headDim, Base: 10000, Neox: c.neox}
			var qn, kn DevF32
			if c.norm {
				qn, kn = g.f32(randF32(rng, c.headDim), 1, c.headDim), g.f32(randF32(rng, c.headDim), 1, c.headDim)
			}
			pd, sd, kd, vd := g.i32(pos), g.i32(seq), g.f32(k, B, kvdim), g.f32(v, B, kvdim)
			before := [2][]uint16{readHalves(t, f.kbuf, l.Cells()*kvdim), readHalves(t, f.vbuf, l.Cells()*kvdim)}
			qp, qf := g.f32(q, B, heads*c.headDim), g.f32(q, B, heads*c.headDim)
			if err := dev.RopeStorePaged(RopeStorePagedOp{Pool: f.pool, Q: qp, K: kd, V: vd, QNorm: qn, KNorm: kn, Eps: 1e-6, Pos: pd, Seq: sd, Rope: r}); err != nil {
				t.Fatal(err)
			}
			if err := dev.RopeStore(RopeStoreOp{Cache: f.flat, Q: qf, K: kd, V: vd, QNorm: qn, KNorm: kn, Eps: 1e-6, Pos: pd, Seq: sd, Rope: r}); err != nil {
				t.Fatal(err)
			}
			checkNMSE(t, "rotated queries", read(t, qp), to64(read(t, qf)), pagedSame)
			flatK, flatV := read(t, DevF32{f.flat.K, l.MaxSeqs * ctx, kvdim}), read(t, DevF32{f.flat.V, l.MaxSeqs * ctx, kvdim})
			mine := map[int64]int{} // cell → the step's row at it
			for b := range seq {
				if cell := l.CellOffset(f.tables, int(seq[b]), int(pos[b])); cell >= 0 {
					mine[cell] = b
				}
			}
			if len(mine) != B-1 {
				t.Fatalf("%d cells for %d tokens and one padding row", len(mine), B)
			}
			for i, half := range []cuda.DevPtr{f.kbuf, f.vbuf} {
				after := readHalves(t, half, l.Cells()*kvdim)
				src := [2][]float32{flatK, flatV}[i]
				var got []float32
				var want []float64
				changed := 0
				for cell := 0; cell < l.Cells(); cell++ {
					b, ok := mine[int64(cell)]
					for j := 0; j < kvdim; j++ {
						h := after[cell*kvdim+j]
						if !ok {
							if h != before[i][cell*kvdim+j] {
								changed++
							}
							continue
						}
						got = append(got, gguf.FP16ToFP32(h))
						want = append(want, float64(src[(int(seq[b])*ctx+int(pos[b]))*kvdim+j]))
					}
				}
				if changed > 0 {
					t.Errorf("%s: %d values of cells no token owns changed", [2]string{"K", "V"}[i], changed)
				}
				checkNMSE(t, [2]string{"K cells", "V cells"}[i], got, want, 1e-6)
			}
		})
	}
}

// TestGPUKVPoolLayout checks that the device's kv_cell (kv.cuh) and Go's
// KVPoolLayout.CellOffset name the same cell, or both -1, for random
// block tables and every (slot, position) of the table and a few
// outside it.
func TestGPUKVPoolLayout(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 1))
	g := newBuffers(t)
	for _, bs := range []int{1, 16, 32, 64} {
		l := KVPoolLayout{MaxSeqs: 5, TableCols: 6, BlockSize: bs, Blocks: 40, KVHeads: 2, HeadDim: 64, Elem: KVPoolF16}
		tables := make([]int32, l.TableLen())
		for i := range tables {
			tables[i] = int32(rng.IntN(l.Blocks+4) - 2) // some ids outside the pool
		}
		var seq, pos []int32
		for s := -1; s <= l.MaxSeqs; s++ {
			for p := -1; p <= l.Ctx(); p++ {
				seq, pos = append(seq, int32(s)), append(pos, int32(p))
			}
		}
		out := g.i32(make([]int32, 2*len(seq)))
		pool := DevKVPool{KVPoolLayout: l, Tables: g.i32(tables).Ptr}
		if err := dev.KVPoolCells(pool, g.i32(seq), g.i32(pos), out.Ptr); err != nil {
			t.Fatal(err)
		}
		words := readI32(t, out)
		bad := 0
		for i := range seq {
			got := int64(uint32(words[2*i])) | int64(words[2*i+1])<<32
			if want := l.CellOffset(tables, int(seq[i]), int(pos[i])); got != want && bad < 5 {
				t.Errorf("blocks of %d: slot %d, position %d: device cell %d, Go %d", bs, seq[i], pos[i], got, want)
				bad++
			}
		}
	}
}

// TestPagedSplitsAgree checks that the pool's split count is the f32
// cache's for the same context (attention_merge merges either).
func TestPagedSplitsAgree(t *testing.T) {
	for _, ctx := range []int{1, 15, 16, 100, 1024, 1025, 4096, 100000} {
		l := KVPoolLayout{TableCols: ctx, BlockSize: 1}
		if a, b := pagedSplits(l), attentionSplits(DevKVCache{Ctx: ctx}); a != b {
			t.Errorf("context %d: %d splits over the pool, %d over the f32 cache", ctx, a, b)
		}
	}
}

// BenchmarkGPUAttentionPaged times AttentionPaged (the partial results and
// their merge) over a paged f16 pool of 32-token blocks with a context of
// 8192, Llama 8B's heads (32 over 8 KV heads of 128 values), B tokens
// each at depth pos of its own sequence, on attention_vec_pf16, on
// attention_part_pf16 and on attention_vec_pf16's _used twins (splits of
// at least 32, 64 and 128 positions, only the used ones written and
// merged), and reports the cache's bytes read per second
// (K and V rows of pos+1 positions a token) beside TFLOP/s.
func BenchmarkGPUAttentionPaged(b *testing.B) {
	const heads, kvHeads, hd, bs, ctx = 32, 8, 128, 32, 8192
	for _, B := range []int{1, 16, 64} {
		for _, depth := range []int{128, 576, 2048, 8000} {
			g := newBuffers(b)
			cols := ctx / bs
			l := KVPoolLayout{MaxSeqs: B, TableCols: cols, BlockSize: bs, Blocks: B * cols, KVHeads: kvHeads, HeadDim: hd, Elem: KVPoolF16}
			tables := make([]int32, l.TableLen())
			for i := range tables {
				tables[i] = int32(i)
			}
			pool := DevKVPool{KVPoolLayout: l, K: g.halves(l.Cells()*l.KVDim(), 0x3c00), V: g.halves(l.Cells()*l.KVDim(), 0x3800), Tables: g.i32(tables).Ptr}
			seq, pos := make([]int32, B), make([]int32, B)
			for i := range seq {
				seq[i], pos[i] = int32(i), int32(depth)
			}
			rng := rand.New(rand.NewPCG(7, uint64(B)))
			q := g.f32(randF32(rng, B*heads*hd), B, heads*hd)
			out := g.poisoned(B, heads*hd)
			pd, sd := g.i32(pos), g.i32(seq)
			scratch := g.poisoned(1, AttentionPagedScratch(l, B, heads))
			seen := float64(B) * float64(depth+1)
			bytes := seen * float64(l.KVDim()) * 2 * 2
			// part, vec, and vec's _used twins with splits of 32, 64 and 128
			// positions at least (LLMSERVE_ATTENTION_VEC_MIN).
			for _, k := range []struct {
				vec    bool
				minPer int
			}{{true, 0}, {false, 0}, {true, 32}, {true, 64}, {true, 128}} {
				name := "part"
				if k.vec {
					name = "vec"
				}
				if k.minPer > 0 {
					name += fmt.Sprintf("_used%d", k.minPer)
				}
				b.Run(fmt.Sprintf("B%d_pos%d/%s", B, depth, name), func(b *testing.B) {
					was, wasMin := dev.attVec, dev.attVecMin
					dev.attVec, dev.attVecMin = k.vec, k.minPer
					defer func() { dev.attVec, dev.attVecMin = was, wasMin }()
					timeLaunches(b, 4*heads*hd*seen, func() error { return dev.AttentionPaged(pool, q, out, heads, pd, sd, scratch) })
					b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/op")
					b.ReportMetric(bytes*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
				})
			}
		}
	}
}
