package kernels

import (
	"fmt"
	"testing"
)

// A CPU model of how mvq.cu deals a rotated Q/K/V product's rows in pairs
// (pair_rows) and which pair index each rotates with (mv_store_pair),
// written from the kernel line for line: row pair p of a segment is rows
// 2p and 2p+1, but with a neox rotation, for Q and K, rows h·hd + q and
// h·hd + q + ropeDim/2 while q = (2p mod hd)/2 < ropeDim/2. The test checks
// that every row of a segment lands in exactly one pair, that each rotated
// pair is the two values rope_store rotates together (i and i + ropeDim/2
// with neox, 2i and 2i + 1 without) with the same frequency index i, and
// that the rows past ropeDim stay unrotated.

// ropePairModel is pair_rows' rows (r, r2) of pair p of a segment of
// segment index s, and mv_store_pair's rotation: rotated and its index i.
func ropePairModel(p, s, hd, ropeDim int, neox bool) (r, r2, i int, rotated bool) {
	r, r2 = 2*p, 2*p+1
	if neox && s < 2 {
		half, q := ropeDim>>1, (r%hd)>>1
		if q < half {
			r -= q
			r2 = r + half
		}
	}
	local := r % hd
	i = local >> 1
	if neox {
		i = local
	}
	return r, r2, i, s < 2 && 2*i < ropeDim
}

func TestRopePairsModel(t *testing.T) {
	for _, c := range []struct{ heads, hd, ropeDim int }{
		{4, 64, 64}, {2, 128, 64}, {3, 96, 96}, {2, 256, 256}, {1, 8, 2}, {2, 32, 16},
	} {
		for _, neox := range []bool{false, true} {
			for s := 0; s < 3; s++ {
				t.Run(fmt.Sprintf("h%d_hd%d_rope%d_neox%v_seg%d", c.heads, c.hd, c.ropeDim, neox, s), func(t *testing.T) {
					rows := c.heads * c.hd
					seen := make([]int, rows)
					for p := 0; p < rows/2; p++ {
						r, r2, i, rot := ropePairModel(p, s, c.hd, c.ropeDim, neox)
						if r < 0 || r2 >= rows || r/c.hd != r2/c.hd {
							t.Fatalf("pair %d: rows %d and %d leave the segment or their head", p, r, r2)
						}
						seen[r]++
						seen[r2]++
						l0, l1 := r%c.hd, r2%c.hd
						// rope_store's pair i: values (i0, i1) it rotates together.
						var i0, i1 int
						switch {
						case 2*i >= c.ropeDim || s == 2:
							if rot {
								t.Fatalf("pair %d (rows %d, %d) rotates past ropeDim or in V", p, r, r2)
							}
							if l1 != l0+1 {
								t.Fatalf("unrotated pair %d: rows %d, %d, want neighbours", p, r, r2)
							}
							continue
						case neox:
							i0, i1 = i, i+c.ropeDim/2
						default:
							i0, i1 = 2*i, 2*i+1
						}
						if !rot || l0 != i0 || l1 != i1 {
							t.Fatalf("pair %d: rows %d, %d (head values %d, %d), rotation %v with index %d; rope_store rotates values %d and %d together",
								p, r, r2, l0, l1, rot, i, i0, i1)
						}
					}
					for r, n := range seen {
						if n != 1 {
							t.Fatalf("row %d is in %d pairs", r, n)
						}
					}
				})
			}
		}
	}
}
