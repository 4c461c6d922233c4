package kernels

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestPrefillTiles(t *testing.T) {
	seqRun := func(seq, pos0 int32, n int) ([]int32, []int32) {
		s, p := make([]int32, n), make([]int32, n)
		for i := range s {
			s[i], p[i] = seq, pos0+int32(i)
		}
		return s, p
	}
	long, longPos := seqRun(0, 5, 130)
	cases := []struct {
		name     string
		seq, pos []int32
		tile     int
		want     []PrefillTile
	}{
		{"empty", nil, nil, 64, nil},
		{"one prompt", []int32{0, 0, 0, 0, 0}, []int32{0, 1, 2, 3, 4}, 64, []PrefillTile{{0, 5, 0, 0}}},
		{"split at the tile", long, longPos, 64, []PrefillTile{{0, 64, 0, 5}, {64, 64, 0, 69}, {128, 2, 0, 133}}},
		{"two sequences", []int32{0, 0, 1, 1}, []int32{3, 4, 0, 1}, 64, []PrefillTile{{0, 2, 0, 3}, {2, 2, 1, 0}}},
		{"padding ends a run", []int32{0, -1, 0}, []int32{0, 0, 1}, 64, []PrefillTile{{0, 1, 0, 0}, {2, 1, 0, 1}}},
		{"negative position skipped", []int32{0, 0, 0}, []int32{-1, 0, 1}, 64, []PrefillTile{{1, 2, 0, 0}}},
		{"position gap", []int32{0, 0}, []int32{0, 2}, 64, []PrefillTile{{0, 1, 0, 0}, {1, 1, 0, 2}}},
		{"position repeats", []int32{0, 0}, []int32{4, 4}, 64, []PrefillTile{{0, 1, 0, 4}, {1, 1, 0, 4}}},
		{"decode rows", []int32{0, 1, 2}, []int32{10, 20, 30}, 64, []PrefillTile{{0, 1, 0, 10}, {1, 1, 1, 20}, {2, 1, 2, 30}}},
		{"same sequence, rows apart", []int32{0, 1, 0}, []int32{0, 0, 1}, 64, []PrefillTile{{0, 1, 0, 0}, {1, 1, 1, 0}, {2, 1, 0, 1}}},
		{"tile 0 counts as 1", []int32{0, 0}, []int32{0, 1}, 0, []PrefillTile{{0, 1, 0, 0}, {1, 1, 0, 1}}},
		{"tile 2", []int32{0, 0, 0}, []int32{0, 1, 2}, 2, []PrefillTile{{0, 2, 0, 0}, {2, 1, 0, 2}}},
		{"rows past the shorter slice", []int32{0, 0, 0}, []int32{0, 1}, 64, []PrefillTile{{0, 2, 0, 0}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := PrefillTiles(c.seq, c.pos, c.tile)
			if !slices.Equal(got, c.want) {
				t.Errorf("PrefillTiles = %v, want %v", got, c.want)
			}
			checkTiles(t, c.seq, c.pos, max(c.tile, 1), got)
		})
	}
}

// TestPrefillTilesRandom checks the tiles of random batches (runs of
// prompt rows, decode rows and padding, in random order) for what every
// table must satisfy (checkTiles).
func TestPrefillTilesRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 18))
	for trial := 0; trial < 200; trial++ {
		var seq, pos []int32
		for len(seq) < 600 {
			s, n := int32(rng.IntN(4))-1, 1+rng.IntN(150)
			p := int32(rng.IntN(1000))
			for i := 0; i < n; i++ {
				seq, pos = append(seq, s), append(pos, p+int32(i))
			}
		}
		tile := 1 + rng.IntN(100)
		checkTiles(t, seq, pos, tile, PrefillTiles(seq, pos, tile))
		if t.Failed() {
			t.Fatalf("trial %d, tile %d", trial, tile)
		}
	}
}

// checkTiles fails unless tiles cover every row with seq ≥ 0 and pos ≥ 0
// exactly once and no other, in batch order, each tile a run of at most
// tile rows of one sequence at consecutive positions, and a tile shorter
// than tile not followed by a row that would continue it.
func checkTiles(t *testing.T, seq, pos []int32, tile int, tiles []PrefillTile) {
	t.Helper()
	n := min(len(seq), len(pos))
	covered := make([]int, n)
	next := 0
	for i, tl := range tiles {
		if tl.Rows < 1 || int(tl.Rows) > tile || int(tl.Row0) < next || int(tl.Row0+tl.Rows) > n {
			t.Errorf("tile %d %+v: rows outside 1..%d, before row %d or past %d", i, tl, tile, next, n)
			return
		}
		for r := tl.Row0; r < tl.Row0+tl.Rows; r++ {
			covered[r]++
			if seq[r] != tl.Seq || pos[r] != tl.Pos0+(r-tl.Row0) {
				t.Errorf("tile %d %+v: row %d is position %d of sequence %d", i, tl, r, pos[r], seq[r])
			}
		}
		next = int(tl.Row0 + tl.Rows)
		if e := next; int(tl.Rows) < tile && e < n && seq[e] == tl.Seq && pos[e] == tl.Pos0+tl.Rows {
			t.Errorf("tile %d %+v of %d rows stops before row %d, which continues it", i, tl, tl.Rows, e)
		}
	}
	for r := 0; r < n; r++ {
		want := 1
		if seq[r] < 0 || pos[r] < 0 {
			want = 0
		}
		if covered[r] != want {
			t.Errorf("row %d (sequence %d, position %d) covered %d times, want %d", r, seq[r], pos[r], covered[r], want)
		}
	}
}

func TestPrefillTileTable(t *testing.T) {
	words, maxRows := PrefillTileTable([]PrefillTile{{0, 5, 1, 7}, {5, 64, 2, 0}, {69, 3, 0, 9}})
	if want := []int32{0, 5, 1, 7, 5, 64, 2, 0, 69, 3, 0, 9}; !slices.Equal(words, want) || maxRows != 64 {
		t.Errorf("PrefillTileTable = %v, %d; want %v, 64", words, maxRows, want)
	}
	if words, maxRows := PrefillTileTable(nil); len(words) != 0 || maxRows != 0 {
		t.Errorf("PrefillTileTable(nil) = %v, %d", words, maxRows)
	}
}

func TestPrefillSupports(t *testing.T) {
	cases := []struct {
		headDim int
		ok      bool
		dim     int
	}{
		{0, false, 0}, {8, false, 0}, {16, true, 64}, {48, true, 64}, {64, true, 64}, {72, false, 0},
		{80, true, 128}, {96, true, 128}, {128, true, 128}, {144, true, 256}, {192, true, 256}, {256, true, 256},
		{264, false, 0}, {272, false, 0},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.headDim), func(t *testing.T) {
			if got := PrefillSupports(c.headDim); got != c.ok {
				t.Fatalf("PrefillSupports(%d) = %v, want %v", c.headDim, got, c.ok)
			}
			if c.ok {
				if got := prefillKernelDim(c.headDim); got != c.dim {
					t.Errorf("prefillKernelDim(%d) = %d, want %d", c.headDim, got, c.dim)
				}
			}
		})
	}
}
