package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"llmserve/gguf"
)

// A CPU model of attention_prefill.cu, run where there is no GPU: the
// kernel's blocks, warps and lanes, its shared-memory offsets and every
// index expression, transcribed line by line, over an emulation of the two
// PTX instructions whose fragment layouts it relies on (ldmatrix and
// mma.m16n8k16, as the PTX ISA defines them). f16 values are f32 values
// rounded to f16; products accumulate in f64 and round to f32, which is at
// least as exact as the tensor cores.

// pfHalf rounds x to the nearest f16 value.
func pfHalf(x float32) float32 { return gguf.FP16ToFP32(gguf.FP32ToFP16(x)) }

// pfReg is one 32-bit register holding two f16 values: [0] the low half.
type pfReg [2]float32

// pfLdsm4 is ldmatrix.sync.aligned.m8n8.x4(.trans).shared.b16: lane 8i+r
// gives the address (in f16 values) of row r of matrix i; register i of
// lane l receives matrix i's elements (l/4, 2(l%4)) and (l/4, 2(l%4)+1),
// or with trans (2(l%4), l/4) and (2(l%4)+1, l/4).
func pfLdsm4(smem []float32, addr *[32]int, trans bool) (r [32][4]pfReg) {
	for l := 0; l < 32; l++ {
		for i := 0; i < 4; i++ {
			for e := 0; e < 2; e++ {
				row, col := l/4, 2*(l%4)+e
				if trans {
					row, col = col, row
				}
				r[l][i][e] = smem[addr[8*i+row]+col]
			}
		}
	}
	return r
}

// pfMma is mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32, c += a·b,
// per the PTX fragment layouts (g = l/4, t = l%4): A's register 0 holds
// (g, 2t+e), 1 (g+8, 2t+e), 2 (g, 2t+8+e), 3 (g+8, 2t+8+e); B's register 0
// holds (2t+e, g), 1 (2t+8+e, g); C's value e holds (g + 8(e/2), 2t + e%2).
func pfMma(c *[32][4]float32, a *[32][4]pfReg, b *[32][2]pfReg) {
	var A [16][16]float64
	var B [16][8]float64
	var C [16][8]float64
	for l := 0; l < 32; l++ {
		g, t := l/4, l%4
		for e := 0; e < 2; e++ {
			A[g][2*t+e] = float64(a[l][0][e])
			A[g+8][2*t+e] = float64(a[l][1][e])
			A[g][2*t+8+e] = float64(a[l][2][e])
			A[g+8][2*t+8+e] = float64(a[l][3][e])
			B[2*t+e][g] = float64(b[l][0][e])
			B[2*t+8+e][g] = float64(b[l][1][e])
		}
		for e := 0; e < 4; e++ {
			C[g+8*(e/2)][2*t+e%2] = float64(c[l][e])
		}
	}
	for l := 0; l < 32; l++ {
		g, t := l/4, l%4
		for e := 0; e < 4; e++ {
			row, col := g+8*(e/2), 2*t+e%2
			v := C[row][col]
			for k := 0; k < 16; k++ {
				v += A[row][k] * B[k][col]
			}
			c[l][e] = float32(v)
		}
	}
}

// pfModelArgs are the kernel's arguments.
type pfModelArgs struct {
	q, out, kc, vc                                     []float32
	tiles                                              []int32
	batch, heads, kvHeads, headDim, ctx, maxSeqs, maxR int
	scaleLog2, capIn, capOut                           float32
	window                                             int
}

// pfModel runs attention_prefill<float, D, BN, QREG> over the grid the Go
// side launches, and returns the first shared-memory race a block has
// (see pfModelBlock).
func pfModel(D, BN int, qreg bool, a pfModelArgs) error {
	const threads, M = 128, 64
	group := a.heads / a.kvHeads
	grid := [3]int{(a.maxR*group + M - 1) / M, len(a.tiles) / 4, a.kvHeads}
	for bz := 0; bz < grid[2]; bz++ {
		for by := 0; by < grid[1]; by++ {
			for bx := 0; bx < grid[0]; bx++ {
				if err := pfModelBlock(D, BN, qreg, a, grid, bx, by, bz); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// pfModelBlock runs one block. The kernel's __syncthreads() split the
// block's run into intervals in which its threads and warps run in any
// order, so within one interval no shared value may be both written and
// read, or written twice: the block's first such value is its error.
func pfModelBlock(D, BN int, qreg bool, a pfModelArgs, grid [3]int, bx, by, bz int) error {
	const threads, M = 128, 64
	PITCH, CH := D+8, D/8
	STAGE, TILE := BN*CH/threads, BN*PITCH
	rowsSmem := 4 * BN
	if !qreg {
		rowsSmem += M
	}
	smem := make([]float32, rowsSmem*PITCH)
	for i := range smem {
		smem[i] = float32(math.NaN()) // what no store wrote
	}
	// access[i] is what the current interval (named phase) did to value i
	// of smem: 1 read it, 2 wrote it.
	access := make([]uint8, len(smem))
	phase := "staging of tile 0 and the queries"
	var race error
	touch := func(off, n int, write bool) {
		for i := off; i < off+n; i++ {
			if race == nil && access[i] != 0 && (write || access[i] == 2) {
				what := [3]string{"", "read", "written"}[access[i]]
				race = fmt.Errorf("block (%d, %d, %d), %s: shared value %d %s after it was %s, with no barrier between",
					bx, by, bz, phase, i, map[bool]string{true: "written", false: "read"}[write], what)
			}
			if write {
				access[i] = 2
			} else if access[i] == 0 {
				access[i] = 1
			}
		}
	}
	barrier := func(next string) { clear(access); phase = next }
	ldsm4 := func(addr *[32]int, trans bool) [32][4]pfReg {
		for l := range addr {
			touch(addr[l], 8, false)
		}
		return pfLdsm4(smem, addr, trans)
	}
	kbuf := func(b int) int { return 2 * b * TILE }
	vbuf := func(b int) int { return (2*b + 1) * TILE }
	qs := 4 * TILE
	if qreg {
		qs = 2 * TILE
	}
	chunk, ti, kvh := grid[0]-1-bx, grid[1]-1-by, bz
	row0, rows, seq, pos0 := int(a.tiles[4*ti]), int(a.tiles[4*ti+1]), int(a.tiles[4*ti+2]), int(a.tiles[4*ti+3])
	G, kvdim := a.heads/a.kvHeads, a.kvHeads*a.headDim
	m0, mrows := chunk*M, rows*G
	if rows < 1 || rows > a.maxR || row0 < 0 || row0 > a.batch-rows || seq < 0 || seq >= a.maxSeqs || pos0 < 0 ||
		pos0 > a.ctx-rows || m0 >= mrows {
		return nil
	}
	last := pos0 + (min(m0+M, mrows)-1)/G
	ntiles := last/BN + 1
	j0 := 0
	if a.window > 0 {
		j0 = max(0, pos0+m0/G-a.window+1) / BN
	}
	kvRow := func(x []float32, p int) []float32 { return x[(seq*a.ctx+p)*kvdim:] }

	// Staging, for all threads; kv[tid][i] are a chunk's 8 values.
	kv := make([][][8]float32, threads)
	for i := range kv {
		kv[i] = make([][8]float32, STAGE)
	}
	load := func(x []float32, j int) {
		for tid := 0; tid < threads; tid++ {
			for i := 0; i < STAGE; i++ {
				c := tid + i*threads
				r, e, p := c/CH, (c%CH)*8, j*BN+c/CH
				kv[tid][i] = [8]float32{}
				if p <= last && e < a.headDim {
					copy(kv[tid][i][:], kvRow(x, p)[kvh*a.headDim+e:])
				}
				_ = r
			}
		}
	}
	put := func(buf int) {
		for tid := 0; tid < threads; tid++ {
			for i := 0; i < STAGE; i++ {
				c := tid + i*threads
				r, e := c/CH, (c%CH)*8
				touch(buf+r*PITCH+e, 8, true)
				for k := 0; k < 8; k++ {
					smem[buf+r*PITCH+e+k] = pfHalf(kv[tid][i][k])
				}
			}
		}
	}
	load(a.kc, j0)
	put(kbuf(0))
	load(a.vc, j0)
	for tid := 0; tid < threads; tid++ {
		for c := tid; c < M*CH; c += threads {
			i, e, m := c/CH, (c%CH)*8, m0+c/CH
			touch(qs+i*PITCH+e, 8, true)
			for k := 0; k < 8; k++ {
				v := float32(0)
				if m < mrows && e < a.headDim {
					v = pfHalf(a.q[((row0+m/G)*a.heads+kvh*G+m%G)*a.headDim+e+k])
				}
				smem[qs+i*PITCH+e+k] = v
			}
		}
	}
	put(vbuf(0))
	barrier("the queries' fragments")

	// Per warp and lane state.
	type lane struct {
		qf     [][4]pfReg
		o      [][4]float32
		mx, l  [2]float32
		rpos   [2]int
		g, t   int
		lr, lm int
	}
	type warpState struct {
		lanes         [32]lane
		wm            int
		wfirst, wlast int
	}
	var warps [4]warpState
	qAddr := func(w, kc int) (addr [32]int) {
		for l := 0; l < 32; l++ {
			lr, lm := l&7, l>>3
			addr[l] = qs + (16*w+(lm&1)*8+lr)*PITCH + kc*16 + (lm>>1)*8
		}
		return addr
	}
	for w := range warps {
		ws := &warps[w]
		ws.wm = m0 + 16*w
		ws.wfirst, ws.wlast = pos0+min(ws.wm, mrows-1)/G, pos0+min(ws.wm+15, mrows-1)/G
		for l := 0; l < 32; l++ {
			ln := &ws.lanes[l]
			ln.g, ln.t, ln.lr, ln.lm = l>>2, l&3, l&7, l>>3
			ln.rpos = [2]int{pos0 + (ws.wm+ln.g)/G, pos0 + (ws.wm+ln.g+8)/G}
			ln.o = make([][4]float32, D/8)
			ln.mx = [2]float32{float32(math.Inf(-1)), float32(math.Inf(-1))}
		}
		if qreg {
			for l := range ws.lanes {
				ws.lanes[l].qf = make([][4]pfReg, D/16)
			}
			for kc := 0; kc < D/16; kc++ {
				addr := qAddr(w, kc)
				r := ldsm4(&addr, false)
				for l := range ws.lanes {
					ws.lanes[l].qf[kc] = r[l]
				}
			}
		}
	}
	if qreg {
		barrier("tile 0") // the queries' region is the second stage
	} else {
		phase = "tile 0 and the queries' fragments"
	}
	exp2 := func(x float32) float32 { return float32(math.Exp2(float64(x))) }

	for j := j0; j < ntiles; j++ {
		b := (j - j0) & 1
		next := j+1 < ntiles
		p0 := j * BN
		for w := range warps {
			ws := &warps[w]
			if !(ws.wm < mrows && p0 <= ws.wlast && (a.window == 0 || p0+BN-1 > ws.wfirst-a.window)) {
				continue
			}
			ks, vs := kbuf(b), vbuf(b)
			s := make([][32][4]float32, BN/8)
			for kc := 0; kc < D/16; kc++ {
				var av [32][4]pfReg
				if qreg {
					for l := range ws.lanes {
						av[l] = ws.lanes[l].qf[kc]
					}
				} else {
					addr := qAddr(w, kc)
					av = ldsm4(&addr, false)
				}
				for n := 0; n < BN/8; n += 2 {
					var addr [32]int
					for l := range ws.lanes {
						ln := &ws.lanes[l]
						addr[l] = ks + (8*n+(ln.lm>>1)*8+ln.lr)*PITCH + kc*16 + (ln.lm&1)*8
					}
					kb := ldsm4(&addr, false)
					var b0, b1 [32][2]pfReg
					for l := 0; l < 32; l++ {
						b0[l] = [2]pfReg{kb[l][0], kb[l][1]}
						b1[l] = [2]pfReg{kb[l][2], kb[l][3]}
					}
					pfMma(&s[n], &av, &b0)
					pfMma(&s[n+1], &av, &b1)
				}
			}
			if a.capOut > 0 {
				for n := range s {
					for l := range s[n] {
						for e := 0; e < 4; e++ {
							s[n][l][e] = a.capOut * float32(math.Tanh(float64(s[n][l][e]*a.capIn)))
						}
					}
				}
			}
			if p0+BN-1 > ws.wfirst || (a.window > 0 && p0 <= ws.wlast-a.window) {
				for l := range ws.lanes {
					ln := &ws.lanes[l]
					for n := 0; n < BN/8; n++ {
						for e := 0; e < 4; e++ {
							p, rp := p0+8*n+2*ln.t+(e&1), ln.rpos[e>>1]
							if p > rp || (a.window > 0 && p <= rp-a.window) {
								s[n][l][e] = float32(math.Inf(-1))
							}
						}
					}
				}
			}
			for r := 0; r < 2; r++ {
				var m [32]float32
				for l := range m {
					m[l] = float32(math.Inf(-1))
					for n := 0; n < BN/8; n++ {
						m[l] = max(m[l], max(s[n][l][2*r], s[n][l][2*r+1]))
					}
				}
				for _, x := range []int{1, 2} {
					var sh [32]float32
					for l := range m {
						sh[l] = max(m[l], m[l^x])
					}
					m = sh
				}
				for l := range ws.lanes {
					ln := &ws.lanes[l]
					mNew := max(ln.mx[r], m[l]*a.scaleLog2)
					base := mNew
					if math.IsInf(float64(mNew), -1) {
						base = 0
					}
					corr := exp2(ln.mx[r] - base)
					sum := float32(0)
					for n := 0; n < BN/8; n++ {
						s[n][l][2*r] = exp2(s[n][l][2*r]*a.scaleLog2 - base)
						s[n][l][2*r+1] = exp2(s[n][l][2*r+1]*a.scaleLog2 - base)
						sum += s[n][l][2*r] + s[n][l][2*r+1]
					}
					ln.l[r] = ln.l[r]*corr + sum
					ln.mx[r] = mNew
					for d := 0; d < D/8; d++ {
						ln.o[d][2*r] *= corr
						ln.o[d][2*r+1] *= corr
					}
				}
			}
			for kk := 0; kk < BN/16; kk++ {
				var av [32][4]pfReg
				for l := 0; l < 32; l++ {
					h := func(n, e int) pfReg { return pfReg{pfHalf(s[n][l][e]), pfHalf(s[n][l][e+1])} }
					av[l] = [4]pfReg{h(2*kk, 0), h(2*kk, 2), h(2*kk+1, 0), h(2*kk+1, 2)}
				}
				for d := 0; d < D/8; d += 2 {
					var addr [32]int
					for l := range ws.lanes {
						ln := &ws.lanes[l]
						addr[l] = vs + (16*kk+(ln.lm&1)*8+ln.lr)*PITCH + 8*d + (ln.lm>>1)*8
					}
					vb := ldsm4(&addr, true)
					var b0, b1 [32][2]pfReg
					var o0, o1 [32][4]float32
					for l := 0; l < 32; l++ {
						b0[l] = [2]pfReg{vb[l][0], vb[l][1]}
						b1[l] = [2]pfReg{vb[l][2], vb[l][3]}
						o0[l], o1[l] = ws.lanes[l].o[d], ws.lanes[l].o[d+1]
					}
					pfMma(&o0, &av, &b0)
					pfMma(&o1, &av, &b1)
					for l := 0; l < 32; l++ {
						ws.lanes[l].o[d], ws.lanes[l].o[d+1] = o0[l], o1[l]
					}
				}
			}
		}
		// The loads of tile j+1 and their stores to stage b^1, which the
		// warps above did not read.
		if next {
			load(a.kc, j+1)
			put(kbuf(b ^ 1))
			load(a.vc, j+1)
			put(vbuf(b ^ 1))
		}
		barrier(fmt.Sprintf("tile %d", j+1))
	}

	for w := range warps {
		ws := &warps[w]
		for r := 0; r < 2; r++ {
			var sum [32]float32
			for l := range sum {
				sum[l] = ws.lanes[l].l[r]
			}
			for _, x := range []int{1, 2} {
				var sh [32]float32
				for l := range sum {
					sh[l] = sum[l] + sum[l^x]
				}
				sum = sh
			}
			for l := range ws.lanes {
				ln := &ws.lanes[l]
				m := ws.wm + ln.g + 8*r
				if m >= mrows {
					continue
				}
				inv := 1 / sum[l]
				dst := ((row0+m/G)*a.heads + kvh*G + m%G) * a.headDim
				for d := 0; d < D/8; d++ {
					e := 8*d + 2*ln.t
					if e < a.headDim {
						a.out[dst+e], a.out[dst+e+1] = ln.o[d][2*r]*inv, ln.o[d][2*r+1]*inv
					}
				}
			}
		}
	}
	return race
}

// refCausalAttention is the f64 reference of attention over a cache
// [maxSeqs][ctx][kvHeads*headDim]: row b's heads attend to positions
// 0..pos[b] of sequence seq[b] with scale 1/√headDim; rows with seq < 0
// are NaN (not compared). Rows are computed in parallel when workers > 1.
func refCausalAttention(q, kc, vc []float32, seq, pos []int32, heads, kvHeads, headDim, ctx, workers int) []float64 {
	return refScoredAttention(q, kc, vc, seq, pos, heads, kvHeads, headDim, ctx, workers, PrefillScores{})
}

// refScoredAttention is refCausalAttention with the scores of sc: its
// scale (0: 1/√headDim), the logits soft-capped to Cap·tanh(logit/Cap)
// when Cap > 0, and row b seeing positions pos[b]-Window+1..pos[b] only
// when Window > 0.
func refScoredAttention(q, kc, vc []float32, seq, pos []int32, heads, kvHeads, headDim, ctx, workers int, sc PrefillScores) []float64 {
	out := make([]float64, len(seq)*heads*headDim)
	kvdim, group := kvHeads*headDim, heads/kvHeads
	scale := 1 / math.Sqrt(float64(headDim))
	if sc.Scale > 0 {
		scale = float64(sc.Scale)
	}
	row := func(b int) {
		o := out[b*heads*headDim : (b+1)*heads*headDim]
		if seq[b] < 0 || pos[b] < 0 {
			for i := range o {
				o[i] = math.NaN()
			}
			return
		}
		first, n := 0, int(pos[b])+1
		if sc.Window > 0 {
			first = max(0, n-sc.Window)
		}
		w := make([]float64, n)
		for h := 0; h < heads; h++ {
			qh, kvh := q[(b*heads+h)*headDim:], h/group
			mx := math.Inf(-1)
			for p := first; p < n; p++ {
				k := kc[(int(seq[b])*ctx+p)*kvdim+kvh*headDim:]
				var d float64
				for i := 0; i < headDim; i++ {
					d += float64(qh[i]) * float64(k[i])
				}
				w[p] = d * scale
				if sc.Cap > 0 {
					w[p] = float64(sc.Cap) * math.Tanh(w[p]/float64(sc.Cap))
				}
				mx = math.Max(mx, w[p])
			}
			var sum float64
			for p := first; p < n; p++ {
				w[p] = math.Exp(w[p] - mx)
				sum += w[p]
			}
			oh := o[h*headDim : (h+1)*headDim]
			for p := first; p < n; p++ {
				v := vc[(int(seq[b])*ctx+p)*kvdim+kvh*headDim:]
				for i := range oh {
					oh[i] += w[p] / sum * float64(v[i])
				}
			}
		}
	}
	workers = max(workers, 1)
	done := make(chan struct{})
	for w := 0; w < workers; w++ {
		go func() {
			for b := w; b < len(seq); b += workers {
				row(b)
			}
			done <- struct{}{}
		}()
	}
	for w := 0; w < workers; w++ {
		<-done
	}
	return out
}

// prefillSegment is a run of a batch: rows consecutive positions from pos0
// of sequence seq (seq < 0: padding rows).
type prefillSegment struct{ seq, pos0, rows int }

// prefillBatch lays segments out as a batch's seq and pos.
func prefillBatch(segs []prefillSegment) (seq, pos []int32) {
	for _, s := range segs {
		for i := 0; i < s.rows; i++ {
			seq, pos = append(seq, int32(s.seq)), append(pos, int32(s.pos0+i))
		}
	}
	return seq, pos
}

// comparePrefill is the NMSE of got against want over the rows want
// covers (finite), and the count of values of the other rows that are
// not NaN (the poison the kernel must leave).
func comparePrefill(got []float32, want []float64) (e float64, touched int) {
	var num, den float64
	for i, w := range want {
		g := float64(got[i])
		if math.IsNaN(w) {
			if !math.IsNaN(g) {
				touched++
			}
			continue
		}
		if math.IsNaN(g) || math.IsInf(g, 0) {
			return math.Inf(1), touched
		}
		num += (g - w) * (g - w)
		den += w * w
	}
	if den == 0 {
		return num, touched
	}
	return num / den, touched
}

// TestPrefillModel runs the CPU model of the prefill kernels against the
// f64 reference: every compiled head size (64, 128, 256) and padded ones
// (48, 96, 160), GQA groups 1, 3, 4 and 8, prompts from position 0 and
// continuing a prefix, across tile boundaries, beside decode rows and
// padding; Q scaled by 4 in some cases so that the softmax is sharp. The
// bound: NMSE ≤ 1e-5 (f16 operands; about 1e-7 is expected).
func TestPrefillModel(t *testing.T) {
	mixed := []prefillSegment{{0, 0, 20}, {2, 9, 1}, {-1, 0, 1}, {1, 30, 50}, {3, 77, 1}}
	cases := []struct {
		headDim, heads, kvHeads int
		segs                    []prefillSegment
		qScale                  float32
	}{
		{64, 2, 2, []prefillSegment{{0, 0, 65}}, 1},
		{64, 8, 2, []prefillSegment{{1, 37, 7}}, 4},
		{64, 8, 1, mixed, 1},
		{48, 6, 2, mixed, 1},
		{128, 4, 1, []prefillSegment{{0, 0, 33}}, 1},
		{128, 8, 1, []prefillSegment{{2, 70, 9}, {0, 0, 2}}, 4},
		{128, 3, 3, mixed, 1},
		{96, 4, 1, []prefillSegment{{1, 5, 17}}, 1},
		{256, 4, 1, []prefillSegment{{0, 3, 20}, {1, 0, 1}}, 1},
		{160, 2, 2, []prefillSegment{{0, 0, 18}}, 4},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("d%d_h%d_kv%d_%v", c.headDim, c.heads, c.kvHeads, c.segs), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(c.headDim), uint64(c.heads)))
			seq, pos := prefillBatch(c.segs)
			B, maxSeqs, ctx := len(seq), 4, 100
			kvdim := c.kvHeads * c.headDim
			kc, vc := randVec(rng, maxSeqs*ctx*kvdim), randVec(rng, maxSeqs*ctx*kvdim)
			q := randVec(rng, B*c.heads*c.headDim)
			for i := range q {
				q[i] *= c.qScale
			}
			// Unused (zero) entries after the tiles are skipped; MaxRows
			// may be more than the largest tile's (a graph's fixed grid).
			tiles := append(PrefillTiles(seq, pos, PrefillTileRows), PrefillTile{}, PrefillTile{})
			words, maxRows := PrefillTileTable(tiles)
			maxRows = max(maxRows, min(B, 40))
			out := make([]float32, len(q))
			for i := range out {
				out[i] = float32(math.NaN())
			}
			dim := prefillKernelDim(c.headDim)
			bn, qreg := map[int]int{64: 64, 128: 32, 256: 16}[dim], dim != 256
			if err := pfModel(dim, bn, qreg, pfModelArgs{q: q, out: out, kc: kc, vc: vc, tiles: words, batch: B, heads: c.heads,
				kvHeads: c.kvHeads, headDim: c.headDim, ctx: ctx, maxSeqs: maxSeqs, maxR: maxRows,
				scaleLog2: float32(math.Log2E / math.Sqrt(float64(c.headDim)))}); err != nil {
				t.Fatal(err)
			}
			want := refCausalAttention(q, kc, vc, seq, pos, c.heads, c.kvHeads, c.headDim, ctx, 1)
			e, touched := comparePrefill(out, want)
			t.Logf("NMSE %.3g", e)
			if e > 1e-5 || touched > 0 {
				t.Errorf("NMSE %.3g (bound 1e-5), %d values of uncovered rows written", e, touched)
			}
		})
	}
}

// TestPrefillModelBatchInvariant checks, on the CPU model, that a row's
// result does not depend on the rows around it: a batch of two prompts,
// decode rows and padding in tiles of 64, 16, 5 and 1 row (each row alone)
// gives the same bits in every row.
func TestPrefillModelBatchInvariant(t *testing.T) {
	for _, c := range []struct{ headDim, heads, kvHeads int }{{64, 8, 2}, {128, 4, 1}, {96, 3, 1}, {256, 2, 2}} {
		t.Run(fmt.Sprintf("d%d_h%d_kv%d", c.headDim, c.heads, c.kvHeads), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, uint64(c.headDim)))
			seq, pos := prefillBatch([]prefillSegment{{1, 30, 70}, {2, 9, 1}, {-1, 0, 1}, {0, 0, 40}})
			B, maxSeqs, ctx := len(seq), 3, 100
			kvdim := c.kvHeads * c.headDim
			kc, vc := randVec(rng, maxSeqs*ctx*kvdim), randVec(rng, maxSeqs*ctx*kvdim)
			q := randVec(rng, B*c.heads*c.headDim)
			dim := prefillKernelDim(c.headDim)
			bn, qreg := map[int]int{64: 64, 128: 32, 256: 16}[dim], dim != 256
			var first []float32
			for _, tile := range []int{64, 16, 5, 1} {
				words, maxRows := PrefillTileTable(PrefillTiles(seq, pos, tile))
				out := make([]float32, len(q))
				if err := pfModel(dim, bn, qreg, pfModelArgs{q: q, out: out, kc: kc, vc: vc, tiles: words, batch: B, heads: c.heads,
					kvHeads: c.kvHeads, headDim: c.headDim, ctx: ctx, maxSeqs: maxSeqs, maxR: maxRows,
					scaleLog2: float32(math.Log2E / math.Sqrt(float64(c.headDim)))}); err != nil {
					t.Fatal(err)
				}
				if first == nil {
					first = out
					continue
				}
				for i := range out {
					if math.Float32bits(out[i]) != math.Float32bits(first[i]) {
						t.Fatalf("tiles of %d: value %d (row %d) is %g, %g in tiles of 64", tile, i, i/(c.heads*c.headDim), out[i], first[i])
					}
				}
			}
		})
	}
}

// TestPrefillModelArch runs the CPU model of the prefill kernels with the
// architectures' scores (PrefillScores through kernelTerms, as the device
// gets them) against the f64 reference: logit scales other than
// 1/√headDim, soft-caps that bend the logits (Q scaled by 4), windows
// shorter than a tile, across tile boundaries, starting the block's walk
// past tile 0 and longer than any sequence; gemma2's shapes (heads of 16
// as the golden model's, 256 with two query heads a KV head) and phi3's
// (96, no GQA); prompts continuing a prefix beside decode rows and
// padding. Each case runs in tiles of 64 and of 5 rows, which must give
// the same bits (a row's result does not depend on the rows around it).
func TestPrefillModelArch(t *testing.T) {
	mixed := []prefillSegment{{0, 0, 20}, {2, 9, 1}, {-1, 0, 1}, {1, 30, 50}, {3, 77, 1}}
	cases := []struct {
		headDim, heads, kvHeads int
		segs                    []prefillSegment
		sc                      PrefillScores
	}{
		{16, 2, 1, []prefillSegment{{0, 0, 40}}, PrefillScores{Scale: 0.25, Cap: 5, Window: 8}},
		{64, 8, 2, mixed, PrefillScores{Scale: 0.1, Cap: 2.5}},
		{64, 4, 4, []prefillSegment{{1, 20, 60}}, PrefillScores{Window: 70}},
		{64, 8, 1, mixed, PrefillScores{Window: 1}},
		{96, 4, 4, mixed, PrefillScores{Scale: 0.102, Window: 37}},
		{128, 4, 1, []prefillSegment{{0, 5, 80}, {2, 60, 1}}, PrefillScores{Scale: 0.08, Cap: 30, Window: 33}},
		{256, 4, 2, mixed, PrefillScores{Scale: 0.0625, Cap: 50, Window: 16}},
		{256, 2, 1, []prefillSegment{{1, 40, 30}}, PrefillScores{Cap: 3, Window: 1000}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("d%d_h%d_kv%d_%+v", c.headDim, c.heads, c.kvHeads, c.sc), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(c.headDim), uint64(c.sc.Window+c.heads)))
			seq, pos := prefillBatch(c.segs)
			B, maxSeqs, ctx := len(seq), 4, 100
			kvdim := c.kvHeads * c.headDim
			kc, vc := randVec(rng, maxSeqs*ctx*kvdim), randVec(rng, maxSeqs*ctx*kvdim)
			q := randVec(rng, B*c.heads*c.headDim)
			for i := range q {
				q[i] *= 4 // logits large enough for the cap to bend them
			}
			dim := prefillKernelDim(c.headDim)
			bn, qreg := map[int]int{64: 64, 128: 32, 256: 16}[dim], dim != 256
			scaleLog2, capIn, capOut, window := c.sc.kernelTerms(c.headDim)
			want := refScoredAttention(q, kc, vc, seq, pos, c.heads, c.kvHeads, c.headDim, ctx, 1, c.sc)
			var first []float32
			for _, tile := range []int{64, 5} {
				words, maxRows := PrefillTileTable(PrefillTiles(seq, pos, tile))
				out := make([]float32, len(q))
				for i := range out {
					out[i] = float32(math.NaN())
				}
				if err := pfModel(dim, bn, qreg, pfModelArgs{q: q, out: out, kc: kc, vc: vc, tiles: words, batch: B, heads: c.heads,
					kvHeads: c.kvHeads, headDim: c.headDim, ctx: ctx, maxSeqs: maxSeqs, maxR: maxRows,
					scaleLog2: scaleLog2, capIn: capIn, capOut: capOut, window: window}); err != nil {
					t.Fatal(err)
				}
				e, touched := comparePrefill(out, want)
				t.Logf("tiles of %d: NMSE %.3g", tile, e)
				if e > 1e-5 || touched > 0 {
					t.Errorf("tiles of %d: NMSE %.3g (bound 1e-5), %d values of uncovered rows written", tile, e, touched)
				}
				if first == nil {
					first = out
					continue
				}
				for i := range out {
					if math.Float32bits(out[i]) != math.Float32bits(first[i]) && !(math.IsNaN(float64(out[i])) && math.IsNaN(float64(first[i]))) {
						t.Fatalf("tiles of %d: value %d (row %d) is %g, %g in tiles of 64", tile, i, i/(c.heads*c.headDim), out[i], first[i])
					}
				}
			}
		})
	}
}

// TestPrefillScoresTerms checks the kernel's terms: llama's scores keep
// the scale the kernels always had, bit for bit; a soft-cap moves the
// scale into capIn and leaves scaleLog2 exactly 1; bad terms are refused.
func TestPrefillScoresTerms(t *testing.T) {
	for _, hd := range []int{16, 64, 96, 128, 256} {
		if s, _, out, _ := (PrefillScores{}).kernelTerms(hd); s != float32(math.Log2E/math.Sqrt(float64(hd))) || out != 0 {
			t.Errorf("heads of %d: llama's scaleLog2 %g, capOut %g", hd, s, out)
		}
	}
	s, in, out, w := PrefillScores{Scale: 0.0625, Cap: 50, Window: 4096}.kernelTerms(256)
	if s != 1 || in != float32(0.0625/50.0) || out != float32(50*math.Log2E) || w != 4096 {
		t.Errorf("capped terms: scaleLog2 %g, capIn %g, capOut %g, window %d", s, in, out, w)
	}
	for _, bad := range []PrefillScores{{Scale: -1}, {Cap: float32(math.NaN())}, {Window: -2}, {Scale: float32(math.Inf(1))}} {
		if err := bad.check("attention_prefill"); err == nil {
			t.Errorf("%+v: accepted", bad)
		}
	}
	if err := (PrefillScores{Scale: 0.1, Cap: 30, Window: 10}).check("attention_prefill"); err != nil {
		t.Error(err)
	}
}
