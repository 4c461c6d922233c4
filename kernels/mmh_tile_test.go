package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// A CPU model of one launch of mmh<T, BM, BN, WM, WN> (mmh.cu): the same
// index arithmetic as the kernel (staging, the cp.async pipeline, the
// ldmatrix lane addresses, the fragment registers, the epilogue), run
// against models of ldmatrix and mma.sync m16n8k16 written from the
// fragment layouts of the PTX ISA. It checks that the mapping computes
// X·Wᵀ, that no fragment reads padding, an unfilled buffer or one still
// being copied into, that no value is read or refilled without a barrier
// between its copy and the reads (the kernel's __syncthreads()), that
// every shared and global 16-byte access is aligned, and that each
// ldmatrix phase reads eight distinct bank groups.

// mmhModelLane is one lane's registers: four 32-bit registers of two
// 16-bit values each (low half first).
type mmhModelLane [4][2]float64

// mmhLdmatrixX4 models ldmatrix.x4: lanes 8i..8i+7 give the rows of matrix
// i (addresses in 16-bit values into smem), and register i of lane l
// holds row l/4, values 2(l%4) and 2(l%4)+1, of matrix i.
func mmhLdmatrixX4(smem []float64, addr [32]int) [32]mmhModelLane {
	var out [32]mmhModelLane
	for l := 0; l < 32; l++ {
		for i := 0; i < 4; i++ {
			row := addr[8*i+l/4]
			out[l][i] = [2]float64{smem[row+2*(l%4)], smem[row+2*(l%4)+1]}
		}
	}
	return out
}

// mmhMmaModel models mma.sync.m16n8k16.row.col with f32 accumulation: c
// += A·B, A 16×16 from a (a_0..a_7 in registers 0..3 of each lane), B
// 16×8 from b (b_0..b_3 in registers 0..1), C in c_0..c_3, laid out as the
// PTX ISA gives them for 16-bit A and B: with g = lane/4 and t = lane%4,
// a_i is row g (i ∈ {0,1,4,5}) or g+8, column 2t+(i&1) (i < 4) or
// 2t+8+(i&1); b_i is row 2t+(i&1) (i < 2) or 2t+8+(i&1), column g; c_i is
// row g (i < 2) or g+8, column 2t+(i&1).
func mmhMmaModel(c *[32][4]float64, a [32]mmhModelLane, b [32][2][2]float64) {
	var A [16][16]float64
	var B [16][8]float64
	for l := 0; l < 32; l++ {
		g, t := l/4, l%4
		for i := 0; i < 8; i++ {
			row := g
			if i == 2 || i == 3 || i == 6 || i == 7 {
				row = g + 8
			}
			col := 2*t + i&1
			if i >= 4 {
				col += 8
			}
			A[row][col] = a[l][i/2][i%2]
		}
		for i := 0; i < 4; i++ {
			k := 2*t + i&1
			if i >= 2 {
				k += 8
			}
			B[k][g] = b[l][i/2][i%2]
		}
	}
	for l := 0; l < 32; l++ {
		g, t := l/4, l%4
		for i := 0; i < 4; i++ {
			row, col := g, 2*t+i&1
			if i >= 2 {
				row += 8
			}
			for k := 0; k < 16; k++ {
				c[l][i] += A[row][k] * B[k][col]
			}
		}
	}
}

// mmhModel runs the launch of tile on w (rows × cols), x (batch × cols)
// into y (batch × rows), adding to y when accumulate is set.
func mmhModel(tile mmhTile, w, x, y []float64, rows, cols, batch int, accumulate bool) error {
	BM, BN, WM, WN := tile.rows, tile.batch, tile.warpRows, tile.warpBatch
	BK, stagesInFlight, LDS := tile.bk, tile.stages, tile.lds()
	threads := tile.threads()
	MT, NT := WM/16, WN/8
	stage := (BM + BN) * LDS
	stages := (cols + BK - 1) / BK
	for bx := 0; bx < ceilDivHalf(rows, BM); bx++ {
		for by := 0; by < ceilDivHalf(batch, BN); by++ {
			bm, bn := bx*BM, by*BN
			smem := make([]float64, stagesInFlight*stage)
			for i := range smem {
				smem[i] = math.NaN()
			}
			// The kernel's barriers split its run into intervals. A value of
			// smem may not be read while a copy into it is in flight or has
			// landed with no barrier since (a thread's wait covers its own
			// copies only), nor a copy be issued into a value the interval
			// reads (other warps may still be reading it).
			unsynced := make([]bool, len(smem))      // a copy into the value is in flight, or landed since the last barrier
			read := make([]bool, len(smem))          // the current interval has read the value
			var landed []int                         // the first values of the copies landed since the last barrier
			held := make([]int, stagesInFlight)      // the stage each buffer was last filled with, -1: none
			inFlight := make([]bool, stagesInFlight) // copies into the buffer not yet waited for
			consumed := map[int]bool{}
			type group struct {
				buf    int
				copies []struct {
					dst int
					src []float64
				}
			}
			var queue []group
			var open *group
			issueRows := func(buf, dst0 int, src []float64, r0, limit, n, s int) error {
				k0 := s * BK
				chunks := BK / 8
				if n*chunks%threads != 0 || threads%chunks != 0 {
					return fmt.Errorf("%d rows of %d chunks do not split evenly over %d threads", n, chunks, threads)
				}
				for tid := 0; tid < threads; tid++ {
					for j := 0; j < n*chunks/threads; j++ {
						i, c := tid/chunks+j*(threads/chunks), tid%chunks
						r, k := r0+i, k0+8*c
						dst := dst0 + i*LDS + 8*c
						if dst%8 != 0 {
							return fmt.Errorf("shared copy at value %d: not 16-byte aligned", dst)
						}
						for v := dst; v < dst+8; v++ {
							if read[v] {
								return fmt.Errorf("stage %d: copy into shared value %d issued in the interval that reads it", s, v)
							}
							unsynced[v] = true
						}
						vals := make([]float64, 8)
						if r < limit && k < cols {
							if (r*cols+k)%8 != 0 {
								return fmt.Errorf("global copy of row %d value %d: not 16-byte aligned", r, k)
							}
							copy(vals, src[r*cols+k:r*cols+k+8])
						}
						open.copies = append(open.copies, struct {
							dst int
							src []float64
						}{dst, vals})
					}
				}
				return nil
			}
			load := func(s int) error {
				buf := s % stagesInFlight
				if held[buf] >= 0 && !consumed[held[buf]] {
					return fmt.Errorf("stage %d overwrites stage %d before it is consumed", s, held[buf])
				}
				if inFlight[buf] {
					return fmt.Errorf("stage %d copied into buffer %d while copies into it are in flight", s, buf)
				}
				held[buf], inFlight[buf] = s, true
				open.buf = buf
				if err := issueRows(buf, buf*stage, w, bm, rows, BM, s); err != nil {
					return err
				}
				return issueRows(buf, buf*stage+BM*LDS, x, bn, batch, BN, s)
			}
			commit := func() {
				queue = append(queue, *open)
				open = &group{buf: -1}
			}
			wait := func(n int) {
				for len(queue) > n {
					gr := queue[0]
					queue = queue[1:]
					for _, c := range gr.copies {
						copy(smem[c.dst:c.dst+8], c.src)
						landed = append(landed, c.dst)
					}
					if gr.buf >= 0 {
						inFlight[gr.buf] = false
					}
				}
			}
			barrier := func() {
				for _, d := range landed {
					for v := d; v < d+8; v++ {
						unsynced[v] = false
					}
				}
				landed = nil
				clear(read)
			}
			// readFrag notes the reads of one ldmatrix.x4.
			readFrag := func(addr [32]int, s int) error {
				for _, a := range addr {
					for v := a; v < a+8; v++ {
						if unsynced[v] {
							return fmt.Errorf("stage %d: shared value %d read while a copy into it is in flight or with no barrier since it landed", s, v)
						}
						read[v] = true
					}
				}
				return nil
			}
			for i := range held {
				held[i] = -1
			}
			open = &group{buf: -1}
			for s := 0; s < stagesInFlight-1; s++ {
				if s < stages {
					if err := load(s); err != nil {
						return err
					}
				}
				commit()
			}
			acc := make([][][32][4]float64, threads/32)
			for wp := range acc {
				acc[wp] = make([][32][4]float64, MT*NT)
			}
			for s := 0; s < stages; s++ {
				wait(stagesInFlight - 2)
				barrier()
				if n := s + stagesInFlight - 1; n < stages {
					if err := load(n); err != nil {
						return err
					}
				}
				commit()
				buf := s % stagesInFlight
				if held[buf] != s || inFlight[buf] {
					return fmt.Errorf("stage %d computed from buffer %d holding stage %d (in flight %v)", s, buf, held[buf], inFlight[buf])
				}
				sw, sx := buf*stage, buf*stage+BM*LDS
				for wp := 0; wp < threads/32; wp++ {
					wr, wc := (wp%(BM/WM))*WM, (wp/(BM/WM))*WN
					for kk := 0; kk < BK; kk += 16 {
						a := make([][32]mmhModelLane, MT)
						b := make([][32][2][2]float64, NT)
						for mi := 0; mi < MT; mi++ {
							var addr [32]int
							for l := 0; l < 32; l++ {
								aOff := (l&15)*LDS + 8*(l>>4)
								addr[l] = sw + (wr+16*mi)*LDS + kk + aOff
							}
							if err := mmhCheckLdmatrix(addr, sw, BM, BK, LDS); err != nil {
								return fmt.Errorf("A fragment %d: %w", mi, err)
							}
							if err := readFrag(addr, s); err != nil {
								return err
							}
							a[mi] = mmhLdmatrixX4(smem, addr)
						}
						for nj := 0; nj < NT/2; nj++ {
							var addr [32]int
							for l := 0; l < 32; l++ {
								bOff := ((l&7)+8*(l>>4))*LDS + 8*((l>>3)&1)
								addr[l] = sx + (wc+16*nj)*LDS + kk + bOff
							}
							if err := mmhCheckLdmatrix(addr, sx, BN, BK, LDS); err != nil {
								return fmt.Errorf("B fragments %d: %w", nj, err)
							}
							if err := readFrag(addr, s); err != nil {
								return err
							}
							r := mmhLdmatrixX4(smem, addr)
							for l := 0; l < 32; l++ {
								b[2*nj][l] = [2][2]float64{r[l][0], r[l][1]}
								b[2*nj+1][l] = [2][2]float64{r[l][2], r[l][3]}
							}
						}
						for mi := 0; mi < MT; mi++ {
							for ni := 0; ni < NT; ni++ {
								mmhMmaModel(&acc[wp][mi*NT+ni], a[mi], b[ni])
							}
						}
					}
				}
				consumed[s] = true
			}
			wait(0)
			for wp := 0; wp < threads/32; wp++ {
				wr, wc := (wp%(BM/WM))*WM, (wp/(BM/WM))*WN
				for l := 0; l < 32; l++ {
					g, t := l>>2, l&3
					for mi := 0; mi < MT; mi++ {
						for ni := 0; ni < NT; ni++ {
							for e := 0; e < 4; e++ {
								r := bm + wr + mi*16 + g + (e>>1)*8
								bb := bn + wc + ni*8 + 2*t + (e & 1)
								if r < rows && bb < batch {
									v := acc[wp][mi*NT+ni][l][e]
									if accumulate {
										v += y[bb*rows+r]
									}
									y[bb*rows+r] = v
								}
							}
						}
					}
				}
			}
		}
	}
	return nil
}

// mmhCheckLdmatrix checks the addresses of one ldmatrix.x4 into a staged
// tile of n rows of bk values (lds apart) from value base: each row of 8 values 16-byte aligned,
// inside the tile and clear of the padding, and each phase (matrix) of
// eight rows on eight distinct 16-byte bank groups (banks are 4 bytes, 32
// of them: a 128-byte line).
func mmhCheckLdmatrix(addr [32]int, base, n, bk, lds int) error {
	for l, a := range addr {
		off := a - base
		if a%8 != 0 {
			return fmt.Errorf("lane %d reads value %d: not 16-byte aligned", l, a)
		}
		if off < 0 || off/lds >= n || off%lds+8 > bk {
			return fmt.Errorf("lane %d reads row %d values %d..%d of a %d-row tile of %d values", l, off/lds, off%lds, off%lds+7, n, bk)
		}
	}
	for m := 0; m < 4; m++ {
		seen := map[int]int{}
		for l := 8 * m; l < 8*m+8; l++ {
			bank := (2 * addr[l] / 16) % 8
			if o, ok := seen[bank]; ok {
				return fmt.Errorf("matrix %d: lanes %d and %d read bank group %d", m, o, l, bank)
			}
			seen[bank] = l
		}
	}
	return nil
}

// TestMatMulHalfTileModel runs the CPU model of every tile on shapes that
// are not tile multiples, small integer values so that every sum is
// exact, and compares with X·Wᵀ (and base + X·Wᵀ when accumulating).
func TestMatMulHalfTileModel(t *testing.T) {
	shapes := []struct{ rows, cols, batch int }{
		{1, 8, 1}, {33, 72, 9}, {100, 264, 65}, {130, 40, 130}, {64, 128, 64},
	}
	for _, tile := range mmhTiles {
		if tile.wg {
			continue // the tensor cores read wgmma's operands themselves: TestGPUMatMulHalf checks them
		}
		for _, sh := range shapes {
			for _, accumulate := range []bool{false, true} {
				t.Run(fmt.Sprintf("%v/%dx%d/B%d/acc=%v", tile, sh.rows, sh.cols, sh.batch, accumulate), func(t *testing.T) {
					rng := rand.New(rand.NewPCG(uint64(sh.rows), uint64(sh.cols)))
					ints := func(n int) []float64 {
						v := make([]float64, n)
						for i := range v {
							v[i] = float64(rng.IntN(9) - 4)
						}
						return v
					}
					w, x := ints(sh.rows*sh.cols), ints(sh.batch*sh.cols)
					y := make([]float64, sh.batch*sh.rows)
					base := ints(len(y))
					if accumulate {
						copy(y, base)
					} else {
						for i := range y {
							y[i] = math.NaN()
						}
					}
					if err := mmhModel(tile, w, x, y, sh.rows, sh.cols, sh.batch, accumulate); err != nil {
						t.Fatal(err)
					}
					bad := 0
					for b := 0; b < sh.batch; b++ {
						for r := 0; r < sh.rows; r++ {
							var want float64
							for k := 0; k < sh.cols; k++ {
								want += w[r*sh.cols+k] * x[b*sh.cols+k]
							}
							if accumulate {
								want += base[b*sh.rows+r]
							}
							if got := y[b*sh.rows+r]; got != want {
								if bad < 5 {
									t.Errorf("Y[%d][%d] = %g, want %g", b, r, got, want)
								}
								bad++
							}
						}
					}
					if bad > 0 {
						t.Errorf("%d of %d values wrong", bad, len(y))
					}
				})
			}
		}
	}
}

// TestMatMulHalfTileFor checks the tile choice of both 16-bit products
// (pickTile over mmhTiles' picked tiles and over mmhqTiles): the
// two-a-multiprocessor tile where the batch fills it and its grid covers
// half the multiprocessors, else the largest other whose grid covers them
// all, else the smallest; and every tile's shared memory within the
// H200's 227 KiB a block.
func TestMatMulHalfTileFor(t *testing.T) {
	cases := []struct {
		B, rows, sms int
		half, q16    string
	}{
		{512, 14336, 132, "128x128_64x64_k64s3", "128x128_64x32_k64s3"},
		{512, 4096, 132, "128x128_64x64_k64s3", "128x128_64x32_k64s3"},
		{513, 4096, 132, "128x128_64x64_k64s3", "128x128_64x32_k64s3"},
		{512, 2048, 132, "64x64_32x32", "64x64_32x32_k64s3"},
		{512, 1024, 132, "64x64_32x32", "64x64_32x32_k64s3"},
		{128, 14336, 132, "128x128_64x64_k64s3", "128x128_64x32_k64s3"},
		{127, 14336, 132, "128x64_64x32", "128x64_64x32_k64s3"},
		{128, 4096, 132, "64x64_32x32", "64x64_32x32_k64s3"},
		{64, 14336, 132, "64x64_32x32", "64x64_32x32_k64s3"},
		{1, 4096, 132, "64x64_32x32", "64x64_32x32_k64s3"},
		{1, 1, 132, "64x64_32x32", "64x64_32x32_k64s3"},
	}
	for _, c := range cases {
		if got := mmhTileFor(c.B, c.rows, c.sms).String(); got != c.half {
			t.Errorf("16-bit, B %d, %d rows, %d SMs: tile %s, want %s", c.B, c.rows, c.sms, got, c.half)
		}
		if got := mmhqTileFor(c.B, c.rows, c.sms).String(); got != c.q16 {
			t.Errorf("quantized, B %d, %d rows, %d SMs: tile %s, want %s", c.B, c.rows, c.sms, got, c.q16)
		}
	}
	for _, tile := range mmhTiles {
		if s := tile.shared(); s > 227*1024 {
			t.Errorf("%v: %d bytes of shared memory", tile, s)
		}
		if tile.rows%tile.warpRows != 0 || tile.batch%tile.warpBatch != 0 || tile.warpRows%16 != 0 || tile.warpBatch%16 != 0 {
			t.Errorf("%v: warp tile %d×%d does not divide it in m16 and n16 steps", tile, tile.warpRows, tile.warpBatch)
		}
	}
}
