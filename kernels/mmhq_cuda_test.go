//go:build cuda

package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"

	"llmserve/gguf"
)

// TestGPUMatMulQ16Layout checks that mmhqParams (Go) and MmhqParams
// (mmhq.cu) agree, and the staging figures the shared memory is sized
// with: mmhq_layout writes the C struct's size and field offsets, MMHQ_BK,
// MMHQ_PAD, then the raw stage strides of mmhqKinds.
func TestGPUMatMulQ16Layout(t *testing.T) {
	var p mmhqParams
	want := []layoutField{
		{"sizeof", unsafe.Sizeof(p)},
		{"w", unsafe.Offsetof(p.W)},
		{"x", unsafe.Offsetof(p.X)},
		{"y", unsafe.Offsetof(p.Y)},
		{"row_bytes", unsafe.Offsetof(p.RowBytes)},
		{"rows", unsafe.Offsetof(p.Rows)},
		{"cols", unsafe.Offsetof(p.Cols)},
		{"batch", unsafe.Offsetof(p.Batch)},
		{"accumulate", unsafe.Offsetof(p.Accumulate)},
		{"nseg", unsafe.Offsetof(p.NSeg)},
		{"pad", unsafe.Offsetof(p.Pad)},
	}
	want = append(want, segFields(unsafe.Offsetof(p.mmSegs))...)
	want = append(want, layoutField{"MMHQ_BK", mmhqBK}, layoutField{"MMHQ_PAD", mmhPad})
	for _, k := range mmhqKinds {
		want = append(want, layoutField{"stride " + k.name, uintptr(k.stride)})
	}
	checkLayout(t, "mmhq_layout", want)
}

// TestGPUMatMulQ16Segments checks the quantized 16-bit products of one
// input with three matrices of one layout in one launch against each
// product alone (checkSegments), for every layout, and that a launch
// refuses matrices of two layouts.
func TestGPUMatMulQ16Segments(t *testing.T) {
	const cols = 512
	for _, k := range mmhqKinds {
		t.Run(k.name, func(t *testing.T) {
			var tiles []mmhTile
			for _, tile := range mmhqTiles {
				if mmhqShared(k.name, tile) <= dev.maxShared {
					tiles = append(tiles, tile)
				}
			}
			checkSegments(t, k.typ, k.wide, cols, tiles, dev.matMulHalfQIn)
		})
	}
	g := newBuffers(t)
	rng := rand.New(rand.NewPCG(3, 4))
	x := g.f32(randF32(rng, 4*cols), 4, cols)
	scratch := g.poisoned(1, int(MatMulHalfScratchBytes(4, cols)/4))
	var ops []MatMulOp
	for _, typ := range []gguf.Type{gguf.TypeQ4_K, gguf.TypeQ8_0} {
		w := g.matrix(typ, randomRows(rng, typ, 64, cols), 64, cols, false)
		ops = append(ops, MatMulOp{W: w, X: x, Y: g.poisoned(4, 64), Scratch: scratch.Ptr, ScratchBytes: MatMulHalfScratchBytes(4, cols)})
	}
	if err := dev.matMulHalfQIn(ops, mmhqTiles[len(mmhqTiles)-1]); err == nil {
		t.Error("q4_k and q8_0 matrices in one launch: no error")
	}
}

// mmhqBatches are the batches TestGPUMatMulQ16 runs every shape at, and
// mmhqLargeBatches those of its largest shapes.
var (
	mmhqBatches      = []int{1, 2, 7, 9, 63, 65, 127, 128, 511, 512, 513}
	mmhqLargeBatches = []int{1, 65, 128, 512, 513}
)

// TestGPUMatMulQ16 checks the products of quantized weights on the 16-bit
// tensor cores, for every layout of mmhqKinds, in each tile and in the
// tile matMulHalfQ picks, on random blocks with sane scales and N(0,1)
// activations, at row counts that are not tile multiples (100, 300, 4160)
// and columns 256, 768 and 4096, for every batch of mmhqBatches
// (mmhqLargeBatches at 4160 rows), against the f64 product of the
// dequantized weights (gguf.Dequantize) with X rounded to f16 as
// mmh_convert_f16 rounds it: NMSE ≤ 1e-6 (the kernel rounds each weight
// to f16 once, about 5e-8 on these weights), and against the same product
// with the weights rounded to f16 on the host: NMSE ≤ 1e-8 (the kernel's
// f32 weights are gguf's exactly, TestMatMulQ16StagingModel, and are
// rounded once the same way: what is left is f32 accumulation, about
// 1e-14). Y = X·Wᵀ is written, and added to Y (Residual) at two
// batches. Every product runs twice and must give the same bits; without
// Residual it must equal, bit for bit, the same rows of the product at the
// largest batch in the smallest tile (every value sums its k values in the
// same order in every tile and batch); a wide layout must give the bits of
// the same matrix as stored. Large shapes are checked on their first and
// last rows and 48 random ones, and for unwritten values everywhere.
func TestGPUMatMulQ16(t *testing.T) {
	var shapes [][2]int
	for _, rows := range []int{100, 300, 4160} {
		for _, cols := range []int{256, 768, 4096} {
			shapes = append(shapes, [2]int{rows, cols})
		}
	}
	// A small expert's matrices (gate/up 64 × 128, down 128 × 64): narrower
	// than one 256-value stage.
	shapes = append(shapes, [2]int{64, 128}, [2]int{128, 64})
	maxB := mmhqBatches[len(mmhqBatches)-1]
	type path struct {
		name string
		run  func(op MatMulOp) error
	}
	for _, k := range mmhqKinds {
		var paths []path
		for _, tile := range mmhqTiles {
			if n := mmhqShared(k.name, tile); n > dev.maxShared {
				t.Logf("%s tile %v: %d bytes of shared memory, more than this device gives a block (%d)", k.name, tile, n, dev.maxShared)
				continue
			}
			paths = append(paths, path{tile.String(), func(op MatMulOp) error { return dev.matMulHalfQIn([]MatMulOp{op}, tile) }})
		}
		paths = append(paths, path{"picked", dev.matMulHalfQ})
		for _, shape := range shapes {
			rows, cols := shape[0], shape[1]
			t.Run(fmt.Sprintf("%s/%dx%d", k.name, rows, cols), func(t *testing.T) {
				if mmhqKindOf(k.typ, rows, cols, k.wide) == "" {
					if cols%256 != 0 && (k.wide || k.typ.BlockSize() == 256) {
						t.Skipf("%s: rows of %d values are no whole 256-value super-blocks", k.name, cols)
					}
					t.Fatalf("matMulHalfQ reads no %s matrix of %d×%d", k.name, rows, cols)
				}
				rng := rand.New(rand.NewPCG(uint64(rows), uint64(cols)+uint64(k.typ)))
				g := newBuffers(t)
				data := randomRows(rng, k.typ, rows, cols)
				w := g.matrix(k.typ, data, rows, cols, k.wide)
				if !mmhqSupports(w) {
					t.Fatalf("matMulHalfQ reads no %s matrix of %d×%d", k.name, rows, cols)
				}
				x := randF32(rng, maxB*cols)
				xr := mmhRound(gguf.TypeF16, x)
				checked := mmhCheckedRows(rng, rows)
				exact, half := mmhqReference(k.typ, data, rows, cols, xr, checked)
				dx := g.f32(x, maxB, cols)
				scratch := g.poisoned(1, int(MatMulHalfScratchBytes(maxB, cols)/4))
				sb := int64(scratch.Len()) * 4
				y0 := g.poisoned(maxB, rows)
				small := mmhqTiles[len(mmhqTiles)-1]
				if err := dev.matMulHalfQIn([]MatMulOp{{W: w, X: dx, Y: y0, Scratch: scratch.Ptr, ScratchBytes: sb}}, small); err != nil {
					t.Fatal(err)
				}
				baseline := read(t, y0)
				if k.wide {
					ws := g.matrix(k.typ, data, rows, cols, false)
					y1 := g.poisoned(maxB, rows)
					if err := dev.matMulHalfQIn([]MatMulOp{{W: ws, X: dx, Y: y1, Scratch: scratch.Ptr, ScratchBytes: sb}}, small); err != nil {
						t.Fatal(err)
					}
					if n := mmqDiffer(baseline, read(t, y1)); n > 0 {
						t.Errorf("%d of %d values differ between the wide layout and the matrix as stored", n, len(baseline))
					}
				}
				batches := mmhqBatches
				if rows > 1024 {
					batches = mmhqLargeBatches
				}
				var worst, worstHalf float64
				for _, p := range paths {
					for _, B := range batches {
						for _, residual := range []bool{false, true} {
							if residual && B != 9 && B != maxB {
								continue
							}
							t.Run(fmt.Sprintf("%s/B%d/residual=%v", p.name, B, residual), func(t *testing.T) {
								var base []float32
								if residual {
									base = randF32(rng, B*rows)
								}
								var runs [2][]float32
								for i := range runs {
									y := g.poisoned(B, rows)
									if residual {
										y = g.f32(base, B, rows)
									}
									op := MatMulOp{W: w, X: dx.Slice(0, B), Y: y, Residual: residual, Scratch: scratch.Ptr, ScratchBytes: sb}
									if err := p.run(op); err != nil {
										t.Fatal(err)
									}
									runs[i] = read(t, y)
								}
								all := runs[0]
								checkWritten(t, all, rows)
								if n := mmqDiffer(runs[0], runs[1]); n > 0 {
									t.Errorf("%d of %d values differ between two runs of the same product", n, len(all))
								}
								if !residual {
									if n := mmqDiffer(all, baseline[:len(all)]); n > 0 {
										t.Errorf("%d of %d values differ from the same product in tiles of %v at batch %d", n, len(all), small, maxB)
									}
								}
								n := B * len(checked)
								got := checkedValues(all, base, rows, checked)
								checkNMSE(t, "exact weights, rounded activations", got, exact[:n], 1e-6)
								checkNMSE(t, "f16 weights, rounded activations", got, half[:n], 1e-8)
								worst, worstHalf = max(worst, gpuNMSE(got, exact[:n])), max(worstHalf, gpuNMSE(got, half[:n]))
							})
						}
					}
				}
				t.Logf("largest NMSE: %.3g against the exact weights, %.3g against the weights rounded to f16 (X rounded to f16 in both)", worst, worstHalf)
			})
		}
	}
}

// mmhqReference is the f64 product of the listed rows of the t matrix
// data (GGUF layout, rows × cols) with every row of xr, index
// b·len(checked)+i for row b of xr and row checked[i]: with the weights as
// gguf.Dequantize gives them (exact), and with each rounded to f16 (half).
func mmhqReference(t gguf.Type, data []byte, rows, cols int, xr []float32, checked []int) (exact, half []float64) {
	B := len(xr) / cols
	rb := len(data) / rows
	exact, half = make([]float64, B*len(checked)), make([]float64, B*len(checked))
	for i, r := range checked {
		wr := refDequantRow(t, data[r*rb:(r+1)*rb], cols)
		wh := make([]float64, cols)
		for k, v := range wr {
			wh[k] = float64(gguf.FP16ToFP32(gguf.FP32ToFP16(float32(v))))
		}
		for b := 0; b < B; b++ {
			xb := xr[b*cols : (b+1)*cols]
			var e, h float64
			for k := range wr {
				e += wr[k] * float64(xb[k])
				h += wh[k] * float64(xb[k])
			}
			exact[b*len(checked)+i], half[b*len(checked)+i] = e, h
		}
	}
	return exact, half
}

// TestGPUMatMulQ16Refuses checks that matMulHalfQ names what it cannot run.
func TestGPUMatMulQ16Refuses(t *testing.T) {
	g := newBuffers(t)
	rng := rand.New(rand.NewPCG(1, 2))
	w := g.matrix(gguf.TypeQ4_K, randomRows(rng, gguf.TypeQ4_K, 64, 256), 64, 256, false)
	x, y := g.poisoned(4, 256), g.poisoned(4, 64)
	scratch := g.poisoned(1, int(MatMulHalfScratchBytes(4, 256)/4))
	good := MatMulOp{W: w, X: x, Y: y, Scratch: scratch.Ptr, ScratchBytes: MatMulHalfScratchBytes(4, 256)}
	checkRefuses(t, "matMulHalfQ", dev.matMulHalfQ, good, append([]refusal{
		{"type f16", func(op *MatMulOp) { op.W.Type = gguf.TypeF16 }},
		{"type q2_k", func(op *MatMulOp) { op.W.Type = gguf.TypeQ2_K }},
		{"wide q4_k", func(op *MatMulOp) { op.W.Wide = true }},
		{"cols of a k-quant", func(op *MatMulOp) { op.W.Cols, op.X.Cols = 192, 192 }},
		{"weights alignment", func(op *MatMulOp) { op.W.Ptr += 4 }},
	}, halfRefusals...))
}

// TestGPUMatMulsQ16 checks that MatMulsOp.Q16 runs the matrices mmhq.cu
// reads there and no others: with Q16, from an RMS-normalized input (which
// MatMuls then writes to Temp), a Q4_K and a wide Q6_K product with a bias
// give the bits of matMulHalfQ on the normalized input plus AddBias, and a
// Q3_K one (which mmhq.cu does not read) those of MatMul on it plus
// AddBias; the Q4_K and Q6_K products differ from those MatMuls gives
// without Q16 (the int8 products ran there).
func TestGPUMatMulsQ16(t *testing.T) {
	const B, cols = 37, 512
	rng := rand.New(rand.NewPCG(9, 10))
	g := newBuffers(t)
	type seg struct {
		typ  gguf.Type
		wide bool
		rows int
	}
	segs := []seg{{gguf.TypeQ4_K, false, 96}, {gguf.TypeQ6_K, true, 64}, {gguf.TypeQ3_K, false, 32}}
	x, norm := randF32(rng, B*cols), randF32(rng, cols)
	X, N := g.f32(x, B, cols), g.f32(norm, 1, cols)
	scratch := g.poisoned(1, int(MatMulsScratchBytes(B, cols)/4))
	sb := int64(scratch.Len()) * 4
	var ms []MatVecSeg
	for _, s := range segs {
		w := g.matrix(s.typ, randomRows(rng, s.typ, s.rows, cols), s.rows, cols, s.wide)
		ms = append(ms, MatVecSeg{W: w, Y: g.poisoned(B, s.rows), Bias: g.f32(randF32(rng, s.rows), 1, s.rows)})
	}
	run := func(q16 bool) [][]float32 {
		t.Helper()
		temp := g.poisoned(B, cols)
		op := MatMulsOp{Segs: ms, X: X, Norm: N, Eps: 1e-5, Scratch: scratch.Ptr, ScratchBytes: sb, Temp: temp, Q16: q16}
		if err := dev.MatMuls(op); err != nil {
			t.Fatal(err)
		}
		var out [][]float32
		for _, s := range ms {
			out = append(out, read(t, s.Y))
		}
		return out
	}
	with, without := run(true), run(false)
	// The same input on the host path: RMSNorm into a buffer, then each
	// product alone.
	xn := g.poisoned(B, cols)
	if err := dev.RMSNorm(X, N, xn, 1e-5); err != nil {
		t.Fatal(err)
	}
	for i, s := range ms {
		y := g.poisoned(B, s.W.Rows)
		op := MatMulOp{W: s.W, X: xn, Y: y, Scratch: scratch.Ptr, ScratchBytes: sb}
		var err error
		if mmhqSupports(s.W) {
			err = dev.matMulHalfQ(op)
		} else {
			err = dev.MatMul(op)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := dev.AddBias(y, s.Bias); err != nil {
			t.Fatal(err)
		}
		want := read(t, y)
		if mmhqSupports(s.W) {
			if n := mmqDiffer(with[i], want); n > 0 {
				t.Errorf("%v (wide %v) with Q16: %d of %d values differ from matMulHalfQ's", s.W.Type, s.W.Wide, n, len(want))
			}
			if n := mmqDiffer(without[i], with[i]); n == 0 {
				t.Errorf("%v (wide %v): the same bits with and without Q16: the 16-bit path did not run", s.W.Type, s.W.Wide)
			}
		} else if n := mmqDiffer(with[i], want); n > 0 {
			t.Errorf("%v with Q16: %d of %d values differ from MatMul's", s.W.Type, n, len(want))
		}
	}
}

// BenchmarkGPUMatMulQ16 times the products of quantized weights on the
// 16-bit tensor cores (mmhq.cu) in each tile and in the one matMulHalfQ
// picks, beside MatMul's default (the int8 products), for Q4_K, Q6_K and
// Q8_0 as the engine stores them (wide where Widens), Q4_0 and Q5_K, over
// Llama-3.1-8B's attention output (4096 × 4096), FFN up (14336 × 4096),
// FFN down (4096 × 14336) and a 1024 × 4096 product, at batches 64, 128
// and 512. It prints one line per (layout, shape, batch) with the paths
// sorted fastest first (TFLOP/s, counting 2·B·rows·cols per call, the
// rounding of X included, timed with device events), then a summary of
// the best mmhq tile beside MatMul's default. Run it once:
// -test.benchtime=1x.
func BenchmarkGPUMatMulQ16(b *testing.B) {
	shapes := [][2]int{{4096, 4096}, {14336, 4096}, {4096, 14336}, {1024, 4096}}
	types := []gguf.Type{gguf.TypeQ4_K, gguf.TypeQ6_K, gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeQ5_K}
	batches := []int{64, 128, 512}
	maxB := batches[len(batches)-1]
	start, end := benchEvent(b), benchEvent(b)
	var summary []string
	for _, shape := range shapes {
		rows, cols := shape[0], shape[1]
		for _, typ := range types {
			rng := rand.New(rand.NewPCG(5, uint64(typ)))
			g := newBuffers(b)
			wide := Widens(typ, cols) // as the engine stores Q8_0 and Q6_K
			w := g.matrix(typ, randomRows(rng, typ, rows, cols), rows, cols, wide)
			kind := mmhqKind(w)
			x := g.f32(randF32(rng, maxB*cols), maxB, cols)
			y := g.poisoned(maxB, rows)
			sb := max(MatMulScratchBytes(maxB, cols), MatMulHalfScratchBytes(maxB, cols))
			scratch := g.poisoned(1, int(sb/4))
			for _, B := range batches {
				op := MatMulOp{W: w, X: x.Slice(0, B), Y: y.Slice(0, B), Scratch: scratch.Ptr, ScratchBytes: sb}
				paths := []benchPath{{"mmq-default", func() error { return dev.MatMul(op) }}}
				for _, tile := range mmhqTiles {
					if mmhqShared(kind, tile) <= dev.maxShared {
						paths = append(paths, benchPath{"mmhq" + tile.String(), func() error { return dev.matMulHalfQIn([]MatMulOp{op}, tile) }})
					}
				}
				picked := mmhqTileFor(B, rows, dev.Context().Multiprocessors())
				paths = append(paths, benchPath{"mmhq-picked-" + picked.String(), func() error { return dev.matMulHalfQ(op) }})
				res := timePaths(b, start, end, paths, 2*float64(B)*float64(rows)*float64(cols))
				deflt := res[0].tflops
				fmt.Println(benchLine(fmt.Sprintf("mmhq-bench %s %dx%d B=%d", kind, rows, cols, B), res))
				best := res[0]
				if best.name == "mmq-default" && len(res) > 1 {
					best = res[1]
				}
				summary = append(summary, fmt.Sprintf("mmhq-best %s %dx%d B=%d: %s %.1f, mmq default %.1f", kind, rows, cols, B, best.name, best.tflops, deflt))
			}
		}
	}
	for _, l := range summary {
		fmt.Println(l)
	}
}
