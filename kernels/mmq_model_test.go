package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"llmserve/gguf"
)

// A Go model of how mmq.cu's tensor-core products read the layouts of
// mmq_types.cuh (Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q6_K as stored and wide),
// so that plain go test checks the byte offsets, shifts and scale indices
// without a device: mmqModelStage copies a stage of a row into its
// shared-memory row as load_w does (the 2-byte aligned types by sections
// of whole words, with the bounds of every read checked), mmqModelFrag
// reads block j for fragment column t as frag/frag16 do, and the values
// dw·q − mw they give must equal gguf.Dequantize's bit for bit.
// TestMmqModelFragments also runs compute_stage16's fragment arithmetic
// (two m16n8k16 products and the 0/1 tile for the half sums) on a model
// of the mma.sync fragment layouts.

// mmqModelKinds are the modelled layouts: the type, wide, and the
// shared-memory row stride (mmqKinds).
var mmqModelKinds = []struct {
	typ    gguf.Type
	wide   bool
	stride int
}{
	{gguf.TypeQ6_K, true, 144}, {gguf.TypeQ6_K, false, 144}, {gguf.TypeQ4_1, false, 80}, {gguf.TypeQ5_0, false, 112},
	{gguf.TypeQ5_1, false, 112}, {gguf.TypeQ2_K, false, 48}, {gguf.TypeQ3_K, false, 112},
}

func mmqLd32(b []byte) int32 { return int32(binary.LittleEndian.Uint32(b)) }

func mmqHalf(b []byte) float32 { return gguf.FP16ToFP32(le16(b)) }

// mmqVsub4 is __vsub4: bytewise a − b, without borrows between bytes.
func mmqVsub4(a, b int32) int32 {
	var out uint32
	for i := 0; i < 4; i++ {
		out |= uint32(byte(uint32(a)>>(8*i))-byte(uint32(b)>>(8*i))) << (8 * i)
	}
	return int32(out)
}

func mmqSpread4(x uint32) int32 { return int32(((x * 0x00204081) & 0x01010101) << 4) }

// mmqModelStage is the shared-memory row of stage s of the row at byte
// rowOff of w (a matrix of cols values per row, at a 16-byte aligned
// address), as load_w leaves it; it fails t on a read outside w.
func mmqModelStage(t *testing.T, typ gguf.Type, wide bool, stride int, w []byte, rowOff, cols, s int) []byte {
	t.Helper()
	row := make([]byte, stride)
	read := func(dst, src, n int) { // a copy of n bytes from w[src:] to row[dst:]
		if src < 0 || src+n > len(w) || dst+n > stride {
			t.Fatalf("%v stage %d: reads w[%d:%d] of %d bytes into row[%d:]", typ, s, src, src+n, len(w), dst)
		}
		copy(row[dst:dst+n], w[src:src+n])
	}
	sb, half := s/2, s%2
	switch {
	case wide: // Q6_K: eight 16-byte chunks of a 224-byte block
		blk := rowOff + sb*224
		for c := 0; c < 8; c++ {
			off := 192 + 16*(c-6)
			if c < 4 {
				off = 64*half + 16*c
			} else if c < 6 {
				off = 128 + 32*half + 16*(c-4)
			}
			read(16*c, blk+off, 16)
		}
	case typ == gguf.TypeQ4_1 || typ == gguf.TypeQ5_0 || typ == gguf.TypeQ5_1:
		block := typ.TypeSize()
		kb0 := s * 4
		n := min(4, cols/32-kb0) * block
		if (rowOff+kb0*block)%4 != 0 || n%4 != 0 {
			t.Fatalf("%v stage %d: %d bytes at %d are not whole aligned words", typ, s, n, rowOff+kb0*block)
		}
		read(0, rowOff+kb0*block, n)
	case typ == gguf.TypeQ2_K:
		blk := rowOff + sb*84
		for u := 0; u < 11; u++ {
			off := 80
			if u < 2 {
				off = 8*half + 4*u
			} else if u < 10 {
				off = 16 + 32*half + 4*(u-2)
			}
			if (blk+off)%4 != 0 {
				t.Fatalf("Q2_K word at %d unaligned", blk+off)
			}
			read(4*u, blk+off, 4)
		}
	default: // Q3_K, Q6_K: sections of whole words
		bytes, words, obyte := 110, 22, 88
		if typ == gguf.TypeQ6_K {
			bytes, words, obyte = 210, 31, 124
		}
		for u := 0; u < words; u++ {
			var off, n, at, wi int
			switch {
			case typ == gguf.TypeQ6_K && u < 17:
				off, n, at, wi = 64*half, 64, 0, u
			case typ == gguf.TypeQ6_K && u < 26:
				off, n, at, wi = 128+32*half, 32, 68, u-17
			case typ == gguf.TypeQ6_K:
				off, n, at, wi = 192, 18, 104, u-26
			case u < 9:
				off, n, at, wi = 0, 32, 0, u
			case u < 18:
				off, n, at, wi = 32+32*half, 32, 36, u-9
			default:
				off, n, at, wi = 96, 14, 72, u-18
			}
			src := rowOff + sb*bytes + off
			o := src & 3
			if c := min(4, max(0, o+n-4*wi)); c > 0 {
				read(at+4*wi, src-o+4*wi, c)
			}
			if u == 0 {
				row[obyte] = byte(o)
			}
		}
	}
	return row
}

// mmqFrag is what frag or frag16 gives for block j of a stage at
// fragment column t: the values 4t..4t+3 (lo) and 16+4t..16+4t+3 (hi) as
// int8 words, and the scale and min of each 16-value half (both halves'
// the same for the 32-value scale types).
type mmqFrag struct {
	lo, hi int32
	dw, mw [2]float32
}

// mmqModelFrag transcribes WLayout<T>::frag/frag16 of mmq_types.cuh.
func mmqModelFrag(typ gguf.Type, wide bool, row []byte, j, t, h int) mmqFrag {
	var f mmqFrag
	switch {
	case typ == gguf.TypeQ6_K:
		ql, qh, sc, d := row, row[64:], row[96+8*h:], row[112:]
		if !wide {
			o := int(row[124])
			ql, qh, sc, d = row[o:], row[68+o:], row[104+o+8*h:], row[120+o:]
		}
		l := ql[32*(j&1):]
		sh, hs := 4*(j>>1), 2*j
		l0, l1, h0, h1 := mmqLd32(l[4*t:]), mmqLd32(l[16+4*t:]), mmqLd32(qh[4*t:]), mmqLd32(qh[16+4*t:])
		f.lo = mmqVsub4(((l0>>sh)&0x0F0F0F0F)|(((h0>>hs)&0x03030303)<<4), 0x20202020)
		f.hi = mmqVsub4(((l1>>sh)&0x0F0F0F0F)|(((h1>>hs)&0x03030303)<<4), 0x20202020)
		dd := mmqHalf(d)
		f.dw = [2]float32{dd * float32(int8(sc[2*j])), dd * float32(int8(sc[2*j+1]))}
	case typ == gguf.TypeQ4_1:
		blk := row[20*j:]
		q := mmqLd32(blk[4+4*t:])
		f.lo, f.hi = q&0x0F0F0F0F, (q>>4)&0x0F0F0F0F
		f.dw = [2]float32{mmqHalf(blk), mmqHalf(blk)}
		f.mw = [2]float32{-mmqHalf(blk[2:]), -mmqHalf(blk[2:])}
	case typ == gguf.TypeQ5_0 || typ == gguf.TypeQ5_1:
		size, qhAt := 22, 2
		if typ == gguf.TypeQ5_1 {
			size, qhAt = 24, 4
		}
		blk := row[size*j:]
		qh := uint32(mmqLd32(blk[qhAt:]))
		q := mmqLd32(blk[qhAt+4+4*t:])
		f.lo = (q & 0x0F0F0F0F) | mmqSpread4((qh>>(4*t))&15)
		f.hi = ((q >> 4) & 0x0F0F0F0F) | mmqSpread4((qh>>(16+4*t))&15)
		f.dw = [2]float32{mmqHalf(blk), mmqHalf(blk)}
		if typ == gguf.TypeQ5_0 {
			f.lo, f.hi = mmqVsub4(f.lo, 0x10101010), mmqVsub4(f.hi, 0x10101010)
		} else {
			f.mw = [2]float32{-mmqHalf(blk[2:]), -mmqHalf(blk[2:])}
		}
	case typ == gguf.TypeQ2_K:
		q0, q1 := mmqLd32(row[8+4*t:]), mmqLd32(row[24+4*t:])
		f.lo, f.hi = (q0>>(2*j))&0x03030303, (q1>>(2*j))&0x03030303
		d, dm := mmqHalf(row[40:]), mmqHalf(row[42:])
		s0, s1 := int(row[2*j]), int(row[2*j+1])
		f.dw = [2]float32{d * float32(s0&15), d * float32(s1&15)}
		f.mw = [2]float32{dm * float32(s0>>4), dm * float32(s1>>4)}
	case typ == gguf.TypeQ3_K:
		o := int(row[88])
		hm, qs, sc := row[o:], row[36+o:], row[72+o:]
		q0, q1 := mmqLd32(qs[4*t:]), mmqLd32(qs[16+4*t:])
		m0, m1 := mmqLd32(hm[4*t:]), mmqLd32(hm[16+4*t:])
		hs := 4*h + j
		f.lo = mmqVsub4(((q0>>(2*j))&0x03030303)|(((m0>>hs)&0x01010101)<<2), 0x04040404)
		f.hi = mmqVsub4(((q1>>(2*j))&0x03030303)|(((m1>>hs)&0x01010101)<<2), 0x04040404)
		d := mmqHalf(sc[12:])
		scale := func(g int) float32 {
			lo := int(sc[g&7]>>(4*(g>>3))) & 15
			hi := int(sc[8+(g&3)]>>(2*(g>>2))) & 3
			return float32((lo | hi<<4) - 32)
		}
		f.dw = [2]float32{d * scale(8*h+2*j), d * scale(8*h+2*j+1)}
	}
	return f
}

// mmqModelRandom is rows × cols random values of typ with f16 scales of
// about 1/64 (mins of either sign for Q4_1 and Q5_1).
func mmqModelRandom(rng *rand.Rand, typ gguf.Type, rows, cols int) []byte {
	rb, _ := typ.RowBytes(int64(cols))
	data := make([]byte, int(rb)*rows)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	halves := map[gguf.Type][]int{gguf.TypeQ4_1: {0, 2}, gguf.TypeQ5_0: {0}, gguf.TypeQ5_1: {0, 2},
		gguf.TypeQ2_K: {80, 82}, gguf.TypeQ3_K: {108}, gguf.TypeQ6_K: {208}}[typ]
	ts := typ.TypeSize()
	for b := 0; b < len(data)/ts; b++ {
		for _, off := range halves {
			binary.LittleEndian.PutUint16(data[b*ts+off:], gguf.FP32ToFP16(float32(rng.NormFloat64()/64)))
		}
	}
	return data
}

// TestMmqModelStages checks that every value the modelled stages and
// fragments give (dw·q − mw, in float32 as gguf rounds it) equals
// gguf.Dequantize's, on rows whose starts and blocks fall at every 4-byte
// alignment a 2-byte aligned type allows, with no bytes after the matrix
// (a read past it fails). The 32-value types also run rows of 320 and 1088
// values, whose last stage is half full: its two blocks past the row must
// read as zero (scale and min 0, so that the zero activations there add
// nothing, never 0·NaN).
func TestMmqModelStages(t *testing.T) {
	for _, k := range mmqModelKinds {
		for _, cols := range []int{256, 768, 320, 1088} {
			if cols%256 != 0 && k.typ != gguf.TypeQ4_1 && k.typ != gguf.TypeQ5_0 && k.typ != gguf.TypeQ5_1 {
				continue // whole 256-value blocks only
			}
			t.Run(fmt.Sprintf("%v/wide=%v/%d", k.typ, k.wide, cols), func(t *testing.T) {
				const rows = 3
				rng := rand.New(rand.NewPCG(uint64(k.typ), uint64(cols)))
				data := mmqModelRandom(rng, k.typ, rows, cols)
				rb, _ := k.typ.RowBytes(int64(cols))
				w, stride := data, int(rb)
				if k.wide {
					var err error
					if w, err = Widen(k.typ, data, rows, cols); err != nil {
						t.Fatal(err)
					}
					wr, _ := WideRowBytes(k.typ, cols)
					stride = int(wr)
				}
				checked, tail := 0, 0
				for r := 0; r < rows; r++ {
					want := make([]float32, cols)
					if err := gguf.Dequantize(k.typ, data[r*int(rb):(r+1)*int(rb)], want); err != nil {
						t.Fatal(err)
					}
					for s := 0; s < (cols+127)/128; s++ {
						row := mmqModelStage(t, k.typ, k.wide, k.stride, w, r*stride, cols, s)
						for j := 0; j < 4; j++ {
							for tc := 0; tc < 4; tc++ {
								f := mmqModelFrag(k.typ, k.wide, row, j, tc, s%2)
								for i := 0; i < 8; i++ {
									word, half := f.lo, 0
									if i >= 4 {
										word, half = f.hi, 1
									}
									q := int8(uint32(word) >> (8 * (i % 4)))
									col := s*128 + 32*j + 16*half + 4*tc + i%4
									got := float32(f.dw[half]*float32(q)) - f.mw[half]
									if col >= cols {
										if f.dw[half] != 0 || f.mw[half] != 0 || got != 0 {
											t.Fatalf("row %d value %d past the row: q %d, d %g, m %g, want scale and min 0", r, col, q, f.dw[half], f.mw[half])
										}
										tail++
										continue
									}
									if math.Float32bits(got) != math.Float32bits(want[col]) {
										t.Fatalf("row %d value %d: %g from the stage (q %d, d %g, m %g), %g dequantized", r, col, got, q, f.dw[half], f.mw[half], want[col])
									}
									checked++
								}
							}
						}
					}
				}
				if checked != rows*cols || tail != rows*((cols+127)/128*128-cols) {
					t.Fatalf("checked %d values of %d and %d past the rows", checked, rows*cols, tail)
				}
			})
		}
	}
}

// TestMmqModelFragments runs compute_stage16's arithmetic for one block on
// a model of the mma.sync fragments (PTX ISA: with g = lane/4, t = lane%4,
// m16n8k32 A words a0..a3 are rows g, g+8, g, g+8 at k 4t.., 4t.., 16+4t..,
// 16+4t..; B words column g at k 4t.. and 16+4t..; m16n8k16 A words rows
// g, g+8 at k 4t.., B column g at 4t..; C (g, 2t), (g, 2t+1), (g+8, 2t),
// (g+8, 2t+1)) and checks each of the 16 × 8 results against the direct
// sum of (dw·q − mw)·qx over the block's two halves.
func TestMmqModelFragments(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var wq [16][32]int8       // weight rows' values
	var dw, mw [16][2]float32 // their halves' scales and mins
	var xq [8][32]int8        // activation columns' values
	for r := range wq {
		for k := range wq[r] {
			wq[r][k] = int8(rng.IntN(64) - 32)
		}
		dw[r] = [2]float32{float32(rng.NormFloat64()), float32(rng.NormFloat64())}
		mw[r] = [2]float32{float32(rng.NormFloat64()), float32(rng.NormFloat64())}
	}
	for c := range xq {
		for k := range xq[c] {
			xq[c][k] = int8(rng.IntN(255) - 127)
		}
	}
	word := func(v []int8) int32 {
		return int32(uint32(uint8(v[0])) | uint32(uint8(v[1]))<<8 | uint32(uint8(v[2]))<<16 | uint32(uint8(v[3]))<<24)
	}
	type lane struct {
		a [4]int32
		b [2]int32
	}
	var lanes [32]lane
	for l := range lanes {
		g, tc := l/4, l%4
		lanes[l].a = [4]int32{word(wq[g][4*tc:]), word(wq[g+8][4*tc:]), word(wq[g][16+4*tc:]), word(wq[g+8][16+4*tc:])}
		lanes[l].b = [2]int32{word(xq[g][4*tc:]), word(xq[g][16+4*tc:])}
	}
	// mma is the warp's product of the A tile whose k-th 16-column slice
	// lane l holds in words aw(l) (rows g, g+8 per slice) with the B tile
	// lane l holds in bw(l); out[l] is lane l's C words.
	mma := func(slices int, aw func(l, slice int) [2]int32, bw func(l, slice int) int32) [32][4]int32 {
		var A [16][32]int32
		var B [32][8]int32
		for l := 0; l < 32; l++ {
			g, tc := l/4, l%4
			for sl := 0; sl < slices; sl++ {
				a, b := aw(l, sl), bw(l, sl)
				for i := 0; i < 4; i++ {
					A[g][16*sl+4*tc+i] = int32(int8(uint32(a[0]) >> (8 * i)))
					A[g+8][16*sl+4*tc+i] = int32(int8(uint32(a[1]) >> (8 * i)))
					B[16*sl+4*tc+i][g] = int32(int8(uint32(b) >> (8 * i)))
				}
			}
		}
		var out [32][4]int32
		for l := 0; l < 32; l++ {
			g, tc := l/4, l%4
			for e := 0; e < 4; e++ {
				r, c := g+8*(e>>1), 2*tc+(e&1)
				var s int32
				for k := 0; k < 16*slices; k++ {
					s += A[r][k] * B[k][c]
				}
				out[l][e] = s
			}
		}
		return out
	}
	lo := mma(1, func(l, _ int) [2]int32 { return [2]int32{lanes[l].a[0], lanes[l].a[1]} }, func(l, _ int) int32 { return lanes[l].b[0] })
	hi := mma(1, func(l, _ int) [2]int32 { return [2]int32{lanes[l].a[2], lanes[l].a[3]} }, func(l, _ int) int32 { return lanes[l].b[1] })
	// The m16n8k32 product of the 0/1 tile {0x01010101, 0, 0, 0x01010101}:
	// slice 0 is words a0, a1, slice 1 words a2, a3.
	ones := [4]int32{0x01010101, 0, 0, 0x01010101}
	sums := mma(2, func(_, sl int) [2]int32 { return [2]int32{ones[2*sl], ones[2*sl+1]} }, func(l, sl int) int32 { return lanes[l].b[sl] })
	seen := 0
	for l := 0; l < 32; l++ {
		g, tc := l/4, l%4
		for e := 0; e < 4; e++ {
			r, c := g+8*(e>>1), 2*tc+(e&1)
			d, m := dw[r], mw[r]
			got := float64(float32(lo[l][e])*d[0]+float32(hi[l][e])*d[1]) -
				float64(m[0]*float32(sums[l][e&1])+m[1]*float32(sums[l][2+(e&1)]))
			var want float64
			for k := 0; k < 32; k++ {
				h := k / 16
				want += (float64(d[h])*float64(wq[r][k]) - float64(m[h])) * float64(xq[c][k])
			}
			if math.Abs(got-want) > 1e-4*(1+math.Abs(want)) {
				t.Errorf("lane %d element %d (row %d, column %d): %g from the fragments, %g directly", l, e, r, c, got, want)
			}
			seen++
		}
	}
	if seen != 128 {
		t.Fatalf("%d results, want 128", seen)
	}
}

// TestMmqModelTiles checks, for every tile of mmqTiles, the warp mapping
// of mmq in mmq.cu: warp w takes rows (w mod BM/WM)·WM and columns
// (w div BM/WM)·warpCols (WM = warpRows), and its lanes' accumulators
// (mi < WM/16, ni, e) at row
// 16mi + g + 8(e/2), column 8ni + 2t + e%2 cover the tile's BM × BN
// values exactly once; and the block fits the kernels' launch bounds
// (16 warps a multiprocessor, whole blocks).
func TestMmqModelTiles(t *testing.T) {
	for _, tile := range mmqTiles {
		t.Run(tile.String(), func(t *testing.T) {
			if tile.warpRows%16 != 0 || tile.rows%tile.warpRows != 0 || tile.batch%tile.warpCols != 0 || tile.warpCols%8 != 0 {
				t.Fatalf("tile %v: want rows a multiple of warpRows, warpRows of 16, batch of warpCols, warpCols of 8", tile)
			}
			if w := tile.warps(); w < 1 || 16%w != 0 {
				t.Fatalf("%d warps: the launch bounds ask for 16/warps whole blocks a multiprocessor", w)
			}
			seen := make([]int, tile.rows*tile.batch)
			for w := 0; w < tile.warps(); w++ {
				wr, wc := (w%(tile.rows/tile.warpRows))*tile.warpRows, (w/(tile.rows/tile.warpRows))*tile.warpCols
				for lane := 0; lane < 32; lane++ {
					g, tt := lane>>2, lane&3
					for mi := 0; mi < tile.warpRows/16; mi++ {
						for ni := 0; ni < tile.warpCols/8; ni++ {
							for e := 0; e < 4; e++ {
								r, b := wr+mi*16+g+(e>>1)*8, wc+ni*8+2*tt+(e&1)
								if r >= tile.rows || b >= tile.batch {
									t.Fatalf("warp %d lane %d: (%d, %d) outside the tile", w, lane, r, b)
								}
								seen[r*tile.batch+b]++
							}
						}
					}
				}
			}
			for i, n := range seen {
				if n != 1 {
					t.Errorf("value (%d, %d) of the tile computed %d times", i/tile.batch, i%tile.batch, n)
				}
			}
		})
	}
}

// TestMmqModelConvert checks convert_stage's mapping (mmq.cu) for every
// converting tile: step idx of thread threadIdx stores row i = idx/16's
// block j = (idx/4)%4 fragment column t = idx%4 as the words lo at
// i·36 + 8j + t and hi 4 words on (MMQ_XSTRIDE is 36 words, and wfrag
// reads the same words): every word of the converted rows is stored
// exactly once; the 32 stores of one warp step
// fall in distinct banks; and the words stay inside the tile's
// MMQ_XSTRIDE·rows bytes.
func TestMmqModelConvert(t *testing.T) {
	const kb, xstride = 4, 144
	for _, tile := range mmqTiles {
		if !tile.cv {
			continue
		}
		t.Run(tile.String(), func(t *testing.T) {
			threads := tile.threads()
			stored := make([]int, tile.rows*xstride/4)
			for tid := 0; tid < threads; tid++ {
				for idx := tid; idx < tile.rows*kb*4; idx += threads {
					tt, j, i := idx&3, (idx>>2)%kb, idx/(4*kb)
					lo := (i*xstride + j*32 + 4*tt) / 4
					stored[lo]++
					stored[lo+4]++
				}
			}
			for i := 0; i < tile.rows; i++ {
				for w := 0; w < xstride/4; w++ {
					want := 1
					if w >= kb*8 {
						want = 0 // the row's padding
					}
					if n := stored[i*xstride/4+w]; n != want {
						t.Errorf("row %d word %d stored %d times, want %d", i, w, n, want)
					}
				}
			}
			// A warp's step: lanes 0..31 at consecutive idx, lo stores.
			for base := 0; base < tile.rows*kb*4; base += 32 {
				banks := map[int]int{}
				for lane := 0; lane < 32; lane++ {
					idx := base + lane
					tt, j, i := idx&3, (idx>>2)%kb, idx/(4*kb)
					bank := ((i*xstride + j*32 + 4*tt) / 4) % 32
					if l, ok := banks[bank]; ok {
						t.Fatalf("step at %d: lanes %d and %d store to bank %d", base, l, lane, bank)
					}
					banks[bank] = lane
				}
			}
		})
	}
}
