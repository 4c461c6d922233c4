package kernels

import (
	"math/rand"
	"testing"
)

// pagedWalk models attention_part_pf16's walk for a token at position p of
// slot seq: the splits' ranges of positions 0..p (attentionSplitRange),
// each walked in tiles of tile rows, row j of a tile
// copied from the cell of its own position (kv_cell, a tile may cross
// blocks) in chunks of 8 values. It returns the cells read, in order, and
// each chunk's element offset into the pool (for alignment).
func pagedWalk(l KVPoolLayout, tables []int32, seq, p, kvh, tile int) (cells []int64, chunks []int64) {
	splits := pagedSplits(l)
	if l.CellOffset(tables, seq, p) < 0 {
		return nil, nil
	}
	for split := 0; split < splits; split++ {
		t0, t1 := attentionSplitRange(p, 0, split, splits)
		for tt := t0; tt < t1; tt += tile {
			n := min(tile, t1-tt)
			for c := 0; c < n*l.HeadDim/8; c++ {
				j, e := c/(l.HeadDim/8), 8*(c%(l.HeadDim/8))
				cell := l.CellOffset(tables, seq, tt+j)
				if e == 0 {
					cells = append(cells, cell)
				}
				if cell >= 0 {
					chunks = append(chunks, cell*int64(l.KVDim())+int64(kvh*l.HeadDim+e))
				}
			}
		}
	}
	return cells, chunks
}

// TestPagedAttentionWalk checks, on the Go model of the decode kernel's
// walk, that a token at position p reads the cells of positions 0..p of
// its own sequence each exactly once and in order (the cells its block
// table names, across block boundaries), never a cell of another
// sequence, and only 16-byte aligned chunks of f16 values; for blocks of
// 1, 16 and 64 cells, heads of 8, 64, 128 and 256 values, the tile the
// launch takes and sequences of 1..3 blocks and a partial one.
func TestPagedAttentionWalk(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	checked := 0
	for _, bs := range []int{1, 16, 64} {
		for _, hd := range []int{8, 64, 128, 256} {
			for _, group := range []int{1, 8} {
				const seqs, cols = 3, 4
				l := KVPoolLayout{MaxSeqs: seqs, TableCols: cols, BlockSize: bs, Blocks: seqs*cols + 2, KVHeads: 2, HeadDim: hd, Elem: KVPoolF16}
				tables := make([]int32, l.TableLen())
				for i, b := range rng.Perm(l.Blocks)[:len(tables)] {
					tables[i] = int32(b)
				}
				tile := attentionPagedTile(hd, group)
				if tile < 1 || tile > 32 || attentionPagedShared(tile, hd, group) > 48*1024-256 {
					t.Fatalf("head %d, group %d: tile %d, %d bytes of shared memory", hd, group, tile, attentionPagedShared(tile, hd, group))
				}
				for _, p := range []int{0, bs - 1, bs, 2*bs - 1, 2 * bs, 3*bs + bs/2} {
					if p >= l.Ctx() {
						continue
					}
					seq := 1
					cells, chunks := pagedWalk(l, tables, seq, p, 1, tile)
					if len(cells) != p+1 {
						t.Fatalf("blocks of %d, head %d, position %d: %d rows read, want %d", bs, hd, p, len(cells), p+1)
					}
					for pos, c := range cells {
						if want := int64(tables[seq*cols+pos/bs])*int64(bs) + int64(pos%bs); c != want {
							t.Fatalf("blocks of %d, head %d, position %d: row %d read cell %d, want %d", bs, hd, p, pos, c, want)
						}
					}
					for _, off := range chunks {
						if off%8 != 0 {
							t.Fatalf("head %d: a chunk at element %d is not 16-byte aligned", hd, off)
						}
					}
					checked++
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no walk checked")
	}
	t.Logf("%d walks checked", checked)
}

func TestPagedSplits(t *testing.T) {
	for _, c := range []struct{ cols, bs, want int }{{1, 1, 1}, {1, 16, 1}, {2, 16, 2}, {4, 32, 8}, {64, 64, 64}, {1000, 16, 64}} {
		l := KVPoolLayout{TableCols: c.cols, BlockSize: c.bs}
		if got := pagedSplits(l); got != c.want {
			t.Errorf("context %d: %d splits, want %d", l.Ctx(), got, c.want)
		}
	}
}

// vecSpan models attention_vec's split of a live token at position p
// (window 0: every position; else the last window up to p): the splits it
// uses (min(splits, ceil(n/minPer)) of the n positions it sees) and
// split's positions [t0, t1).
func vecSpan(p, split, splits, minPer, window int) (used, t0, t1 int) {
	first := 0
	if window > 0 {
		first = max(0, p+1-window)
	}
	n := p + 1 - first
	used = min(splits, (n+minPer-1)/minPer)
	per := (n + used - 1) / used
	return used, first + min(split*per, n), first + min(split*per+per, n)
}

// mergeUsed models attention_merge_used: the splits it reads for a token
// at position p of slot s (none outside the cache).
func mergeUsed(s, p, splits, minPer, ctx, maxSeqs int) int {
	if s < 0 || s >= maxSeqs || p < 0 || p >= ctx {
		return 0
	}
	return min(splits, (p+minPer)/minPer)
}

// TestAttentionVecUsedSplits checks, on the Go model of attention_vec's
// _used twin and attention_merge_used, that for every position of
// contexts of 16 to 4096 and minimum split lengths of 8 to 128 the splits
// the merge reads are exactly the ones the kernel writes (a block returns
// without writing where split ≥ used; one below it may be empty, as when
// ceil((p+1)/used)·used runs past p, and then writes an empty result the
// merge weighs 0), and that together they cover 0..p once, in order; and
// the same for the _arch_used twins' windows.
func TestAttentionVecUsedSplits(t *testing.T) {
	for _, ctx := range []int{16, 100, 640, 1024, 4096} {
		splits := pagedSplits(KVPoolLayout{MaxSeqs: 1, TableCols: ctx / 16, BlockSize: 16})
		for _, minPer := range []int{8, 32, 33, 64, 128} {
			for p := 0; p < ctx; p++ {
				used := mergeUsed(0, p, splits, minPer, ctx, 1)
				next := 0
				for split := 0; split < splits; split++ {
					u, t0, t1 := vecSpan(p, split, splits, minPer, 0)
					if u != used {
						t.Fatalf("ctx %d, min %d, p %d: the kernel uses %d splits, the merge reads %d", ctx, minPer, p, u, used)
					}
					if split >= used {
						continue // the block returns: nothing written, nothing read
					}
					if t0 != next || t1 < t0 {
						t.Fatalf("ctx %d, min %d, p %d, split %d of %d: positions [%d, %d), want from %d", ctx, minPer, p, split, used, t0, t1, next)
					}
					next = t1
				}
				if next != p+1 {
					t.Fatalf("ctx %d, min %d, p %d: the splits cover 0..%d", ctx, minPer, p, next-1)
				}
			}
		}
	}
	// The _arch twins' windows (merged by attention_merge, every split):
	// the splits cover the window's positions once, in order.
	for _, window := range []int{1, 7, 33, 100, 5000} {
		const ctx, splits = 640, 40
		for p := 0; p < ctx; p++ {
			next := max(0, p+1-window)
			for split := 0; split < splits; split++ {
				_, t0, t1 := vecSpan(p, split, splits, 32, window)
				if t0 != next || t1 < t0 {
					t.Fatalf("window %d, p %d, split %d: positions [%d, %d), want from %d", window, p, split, t0, t1, next)
				}
				next = t1
			}
			if next != p+1 {
				t.Fatalf("window %d, p %d: the splits end at %d", window, p, next-1)
			}
		}
	}
	// The _arch_used twins: a block returns where split ≥ the merge's
	// count (that of the whole walk up to p, the window aside), the splits
	// below it cover the window's positions once, in order, and every
	// split holding positions is among them (those past the window's
	// splits are empty and weigh 0).
	for _, window := range []int{1, 7, 33, 100, 5000} {
		const ctx, splits = 640, 40
		for _, minPer := range []int{8, 32, 64} {
			for p := 0; p < ctx; p++ {
				read := mergeUsed(0, p, splits, minPer, ctx, 1)
				next := max(0, p+1-window)
				for split := 0; split < splits; split++ {
					u, t0, t1 := vecSpan(p, split, splits, minPer, window)
					if split >= read {
						if split < u && t1 > t0 {
							t.Fatalf("window %d, min %d, p %d: split %d holds [%d, %d) but the merge reads %d splits", window, minPer, p, split, t0, t1, read)
						}
						continue
					}
					if t0 != next || t1 < t0 {
						t.Fatalf("window %d, min %d, p %d, split %d: positions [%d, %d), want from %d", window, minPer, p, split, t0, t1, next)
					}
					next = t1
				}
				if next != p+1 {
					t.Fatalf("window %d, min %d, p %d: the splits the merge reads end at %d", window, minPer, p, next-1)
				}
			}
		}
	}
	if mergeUsed(-1, 0, 8, 32, 128, 4) != 0 || mergeUsed(0, 128, 8, 32, 128, 4) != 0 || mergeUsed(4, 3, 8, 32, 128, 4) != 0 {
		t.Error("the merge reads splits of a token outside the cache")
	}
	for v, want := range map[string]int{"": 32, "0": 0, "7": 32, "8": 8, "64": 64, "4096": 4096, "4097": 32, "x": 32, "-32": 32} {
		if got := attVecMinFrom(v); got != want {
			t.Errorf("LLMSERVE_ATTENTION_VEC_MIN=%q: %d, want %d", v, got, want)
		}
	}
}
