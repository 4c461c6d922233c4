//go:build cuda

package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"llmserve/gguf"
)

// TestGPUMatMulHalfLayout checks that mmhParams (Go) and MmhParams (mmh.cu)
// agree, and the staging constants the tiles' shared memory is sized
// with: mmh_layout writes the C struct's size and field offsets, then
// MMH_BK, MMH_STAGES and MMH_PAD.
func TestGPUMatMulHalfLayout(t *testing.T) {
	var p mmhParams
	checkLayout(t, "mmh_layout", slices.Concat([]layoutField{
		{"sizeof", unsafe.Sizeof(p)},
		{"w", unsafe.Offsetof(p.W)},
		{"x", unsafe.Offsetof(p.X)},
		{"y", unsafe.Offsetof(p.Y)},
		{"rows", unsafe.Offsetof(p.Rows)},
		{"cols", unsafe.Offsetof(p.Cols)},
		{"batch", unsafe.Offsetof(p.Batch)},
		{"accumulate", unsafe.Offsetof(p.Accumulate)},
		{"type", unsafe.Offsetof(p.Type)},
		{"nseg", unsafe.Offsetof(p.NSeg)},
	}, segFields(unsafe.Offsetof(p.mmSegs)), []layoutField{
		{"glu", unsafe.Offsetof(p.GLU)},
		{"h", unsafe.Offsetof(p.H)},
		{"MMH_BK", mmhBK},
		{"MMH_STAGES", mmhStages},
		{"MMH_PAD", mmhPad},
	}))
}

// segFields are the layout fields of an mmSegs at offset base of a
// parameter struct, in the order of the C structs (w1, w2, y1, y2, rows1,
// rows2).
func segFields(base uintptr) []layoutField {
	var s mmSegs
	return []layoutField{
		{"w1", base + unsafe.Offsetof(s.W1)},
		{"w2", base + unsafe.Offsetof(s.W2)},
		{"y1", base + unsafe.Offsetof(s.Y1)},
		{"y2", base + unsafe.Offsetof(s.Y2)},
		{"rows1", base + unsafe.Offsetof(s.Rows1)},
		{"rows2", base + unsafe.Offsetof(s.Rows2)},
	}
}

// mmhRound is x rounded to the 16-bit type typ and widened back, as
// mmh_convert does on the device (to nearest, ties to even).
func mmhRound(typ gguf.Type, x []float32) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		if typ == gguf.TypeBF16 {
			out[i] = gguf.BF16ToFP32(gguf.FP32ToBF16(v))
		} else {
			out[i] = gguf.FP16ToFP32(gguf.FP32ToFP16(v))
		}
	}
	return out
}

// mmhUnit is the unit roundoff of typ: |round(x) − x| ≤ u·|x| for x in its
// normal range.
func mmhUnit(typ gguf.Type) float64 {
	if typ == gguf.TypeBF16 {
		return 0x1p-8
	}
	return 0x1p-11
}

// TestGPUMatMulHalfConvert checks the rounding of X bit for bit against
// gguf's: values over many binades, ties, f16 subnormals, overflow to
// infinity and signed zeros.
func TestGPUMatMulHalfConvert(t *testing.T) {
	const B, cols = 3, 1000
	rng := rand.New(rand.NewPCG(7, 8))
	x := make([]float32, B*cols)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * math.Exp2(float64(rng.IntN(40)-24)))
	}
	special := []float32{0, float32(math.Copysign(0, -1)), 65504, 65519, 65520, 70000, -1e30, 1e-7, -3e-8, 6e-5,
		1 + 0x1p-11, 1 + 3*0x1p-11, 1 + 0x1p-8, 1 + 3*0x1p-8, 3.3e38, -3.4e38}
	copy(x, special)
	for _, typ := range []gguf.Type{gguf.TypeF16, gguf.TypeBF16} {
		t.Run(typ.String(), func(t *testing.T) {
			g := newBuffers(t)
			w := g.matrix(typ, randomRows(rng, typ, 8, cols), 8, cols, false)
			dx := g.f32(x, B, cols)
			y := g.poisoned(B, 8)
			scratch := g.poisoned(1, int(MatMulHalfScratchBytes(B, cols)/4))
			if err := dev.matMulHalf(MatMulOp{W: w, X: dx, Y: y, Scratch: scratch.Ptr, ScratchBytes: MatMulHalfScratchBytes(B, cols)}); err != nil {
				t.Fatal(err)
			}
			if err := dev.Sync(); err != nil {
				t.Fatal(err)
			}
			raw := make([]byte, MatMulHalfScratchBytes(B, cols))
			if err := readPtr(scratch.Ptr, raw); err != nil {
				t.Fatal(err)
			}
			bad := 0
			for i, v := range x {
				want := gguf.FP32ToFP16(v)
				if typ == gguf.TypeBF16 {
					want = gguf.FP32ToBF16(v)
				}
				if got := binary.LittleEndian.Uint16(raw[2*i:]); got != want {
					if bad < 5 {
						t.Errorf("x[%d] = %g: %#04x on the device, %#04x by gguf", i, v, got, want)
					}
					bad++
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d values rounded differently", bad, len(x))
			}
		})
	}
}

// mmhCheckedRows is every row of a small matrix, or the first and last 8
// rows and 48 random ones of a large one.
func mmhCheckedRows(rng *rand.Rand, rows int) []int {
	var out []int
	if rows <= 256 {
		for r := 0; r < rows; r++ {
			out = append(out, r)
		}
		return out
	}
	for r := 0; r < 8; r++ {
		out = append(out, r, rows-8+r)
	}
	for i := 0; i < 48; i++ {
		out = append(out, 8+rng.IntN(rows-16))
	}
	return out
}

// mmhRef is the f64 reference of the listed rows of W with every row of
// X, index b·len(checked)+i for row b of X and row checked[i] of W: the
// product with X rounded as the device rounds it (q), with X unrounded
// (f), and the bounds of their differences from the device's result:
// accumulation (2⁻¹²·Σ|w·x̂|, generous for f32 sums of up to 2¹² values
// in steps of 16), plus for f the rounding of X (u·Σ|w·x| + 2⁻²⁵·Σ|w| for
// f16 subnormals).
type mmhRef struct {
	q, f, qBound, fBound []float64
}

func mmhReference(typ gguf.Type, data []byte, cols int, x, xr []float32, checked []int) mmhRef {
	B := len(x) / cols
	n := B * len(checked)
	ref := mmhRef{make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)}
	u := mmhUnit(typ)
	for i, r := range checked {
		wr := refDequantRow(typ, data[2*r*cols:2*(r+1)*cols], cols)
		for b := 0; b < B; b++ {
			xb, xq := x[b*cols:(b+1)*cols], xr[b*cols:(b+1)*cols]
			var q, f, aq, af, aw float64
			for k, w := range wr {
				q += w * float64(xq[k])
				f += w * float64(xb[k])
				aq += math.Abs(w * float64(xq[k]))
				af += math.Abs(w * float64(xb[k]))
				aw += math.Abs(w)
			}
			j := b*len(checked) + i
			ref.q[j], ref.f[j] = q, f
			ref.qBound[j] = 0x1p-12*aq + 1e-30
			ref.fBound[j] = ref.qBound[j] + u*af + 0x1p-25*aw
		}
	}
	return ref
}

// mmhBatches are the batch sizes every shape is tested at: below, at and
// past the 64- and 128-row batch tiles.
var mmhBatches = []int{1, 2, 3, 7, 9, 63, 65, 127, 511, 512, 513}

// TestGPUMatMulHalf checks the 16-bit tensor-core products, in each tile
// and in the tile matMulHalf picks, against the f64 reference of the
// exact weights, for F16 and BF16, on random N(0,1) weights and
// activations, for every batch of mmhBatches, at row counts that are not
// tile multiples (1, 33, 100, with column counts that leave the last
// 32-value stage partly full: 8, 72, 264, 520) and at real shapes
// (4096×4096, 14336×4096). Against X rounded as the device rounds it:
// NMSE ≤ 1e-6 (the products of two 16-bit values are exact in f32; what
// is left is f32 accumulation, about 1e-14), and every value within
// 2⁻¹²·Σ|w·x̂|. Against unrounded X: every value within that plus
// u·Σ|w·x| (u = 2⁻¹¹ for f16, 2⁻⁸ for bf16), and over each shape's
// values together NMSE ≤ 1e-6 for F16 and ≤ 3e-5 for BF16 (a CPU
// simulation of the rounding on these shapes gives 4.3e-8 and 2.8e-6; a
// single value's NMSE can be far larger when the product is near zero,
// hence the pooling). Large shapes are checked on
// their first and last rows and 48 random ones, and for unwritten values
// everywhere. Y = X·Wᵀ is written, and added to Y (Residual) at two
// batches. Every product must equal, bit for bit, the same rows of the
// product at the largest batch in the smallest tile. The largest NMSE of
// each shape is logged.
func TestGPUMatMulHalf(t *testing.T) {
	shapes := [][2]int{{1, 520}, {33, 72}, {100, 8}, {100, 264}, {4096, 4096}, {14336, 4096}}
	maxB := mmhBatches[len(mmhBatches)-1]
	type path struct {
		name string
		run  func(op MatMulOp) error
	}
	var paths []path
	for _, tile := range mmhTiles {
		if !dev.mmhTileRuns(tile) {
			t.Logf("tile %v: not on this device (%d bytes of shared memory, a block gets %d; wgmma: %v)", tile, tile.shared(), dev.maxShared, dev.WGMMA())
			continue
		}
		paths = append(paths, path{tile.String(), func(op MatMulOp) error { return dev.matMulHalfIn([]MatMulOp{op}, tile) }})
	}
	paths = append(paths, path{"picked", dev.matMulHalf})
	for _, typ := range []gguf.Type{gguf.TypeF16, gguf.TypeBF16} {
		for _, shape := range shapes {
			rows, cols := shape[0], shape[1]
			t.Run(fmt.Sprintf("%v/%dx%d", typ, rows, cols), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(rows), uint64(cols)+uint64(typ)))
				g := newBuffers(t)
				data := randomRows(rng, typ, rows, cols)
				w := g.matrix(typ, data, rows, cols, false)
				if !matMulHalfSupports(w) {
					t.Fatalf("matMulHalf reads no %v matrix of %d×%d", typ, rows, cols)
				}
				x := randF32(rng, maxB*cols)
				checked := mmhCheckedRows(rng, rows)
				ref := mmhReference(typ, data, cols, x, mmhRound(typ, x), checked)
				dx := g.f32(x, maxB, cols)
				scratch := g.poisoned(1, int(MatMulHalfScratchBytes(maxB, cols)/4))
				y0 := g.poisoned(maxB, rows)
				small := mmhTiles[mmhPicked-1]
				if err := dev.matMulHalfIn([]MatMulOp{{W: w, X: dx, Y: y0, Scratch: scratch.Ptr, ScratchBytes: int64(scratch.Len()) * 4}}, small); err != nil {
					t.Fatal(err)
				}
				baseline := read(t, y0)
				var worstQ, worstF, num, den float64
				for _, p := range paths {
					for _, B := range mmhBatches {
						for _, residual := range []bool{false, true} {
							if residual && B != 9 && B != maxB {
								continue
							}
							t.Run(fmt.Sprintf("%s/B%d/residual=%v", p.name, B, residual), func(t *testing.T) {
								y := g.poisoned(B, rows)
								var base []float32
								if residual {
									base = randF32(rng, B*rows)
									y = g.f32(base, B, rows)
								}
								op := MatMulOp{W: w, X: dx.Slice(0, B), Y: y, Residual: residual,
									Scratch: scratch.Ptr, ScratchBytes: int64(scratch.Len()) * 4}
								if err := p.run(op); err != nil {
									t.Fatal(err)
								}
								all := read(t, y)
								checkWritten(t, all, rows)
								if !residual {
									if differ := mmqDiffer(all, baseline[:len(all)]); differ > 0 {
										t.Errorf("%d of %d values differ from the same product in tiles of %v at batch %d", differ, len(all), small, maxB)
									}
								}
								n := B * len(checked)
								got := checkedValues(all, base, rows, checked)
								q, f := ref.q[:n], ref.f[:n]
								checkNMSE(t, "rounded activations", got, q, 1e-6)
								outside := 0
								for j, v := range got {
									eq, ef := math.Abs(float64(v)-q[j]), math.Abs(float64(v)-f[j])
									bq, bf := ref.qBound[j], ref.fBound[j]
									if residual {
										// y = base + X·Wᵀ in f32, less base again.
										slack := 0x1p-23 * (math.Abs(float64(base[j/len(checked)*rows+checked[j%len(checked)]])) + math.Abs(f[j]))
										bq, bf = bq+slack, bf+slack
									}
									if eq > bq || ef > bf {
										if outside < 5 {
											t.Errorf("Y[%d][%d] = %g: rounded X gives %g (bound %.3g), f32 X %g (bound %.3g)",
												j/len(checked), checked[j%len(checked)], v, q[j], bq, f[j], bf)
										}
										outside++
									}
								}
								if outside > 0 {
									t.Errorf("%d of %d values outside their bounds", outside, n)
								}
								for j, v := range got {
									d := float64(v) - f[j]
									num += d * d
									den += f[j] * f[j]
								}
								worstQ, worstF = max(worstQ, gpuNMSE(got, q)), max(worstF, gpuNMSE(got, f))
							})
						}
					}
				}
				pooled := num / den
				limit := 1e-6
				if typ == gguf.TypeBF16 {
					limit = 3e-5
				}
				if !(pooled <= limit) {
					t.Errorf("NMSE against unrounded X over all batches: %.3g > %.3g", pooled, limit)
				}
				t.Logf("largest NMSE: %.3g against rounded X, %.3g against f32 X (one batch); %.3g against f32 X over all",
					worstQ, worstF, pooled)
			})
		}
	}
}

// TestGPUMatMulHalfSegments checks the 16-bit products of one input with
// three matrices in one launch against each product alone
// (checkSegments).
func TestGPUMatMulHalfSegments(t *testing.T) {
	for _, typ := range []gguf.Type{gguf.TypeF16, gguf.TypeBF16} {
		t.Run(typ.String(), func(t *testing.T) {
			var tiles []mmhTile
			for _, tile := range mmhTiles {
				if dev.mmhTileRuns(tile) {
					tiles = append(tiles, tile)
				}
			}
			checkSegments(t, typ, false, 264, tiles, dev.matMulHalfIn)
		})
	}
}

// checkSegments checks the products of one input with three matrices of
// type typ (wide: in the wide layout) and cols columns in one launch (run
// with three ops: row counts that are not tile multiples, so the
// segments' last tiles are partial) against each product launched alone
// in the same tile: the same bits, in every tile of tiles, at batches 1, 9
// and 130, with and without the residual add; and that run refuses
// segments of two inputs.
func checkSegments(t *testing.T, typ gguf.Type, wide bool, cols int, tiles []mmhTile, run func([]MatMulOp, mmhTile) error) {
	t.Helper()
	const maxB = 130
	segRows := []int{200, 37, 129}
	rng := rand.New(rand.NewPCG(11, uint64(typ)))
	g := newBuffers(t)
	x := g.f32(randF32(rng, maxB*cols), maxB, cols)
	scratch := g.poisoned(1, int(MatMulHalfScratchBytes(maxB, cols)/4))
	sb := MatMulHalfScratchBytes(maxB, cols)
	ws := make([]DevMatrix, len(segRows))
	base := make([][]float32, len(segRows))
	for i, r := range segRows {
		ws[i] = g.matrix(typ, randomRows(rng, typ, r, cols), r, cols, wide)
		base[i] = randF32(rng, maxB*r)
	}
	if len(tiles) == 0 {
		t.Fatal("no tile fits the device's shared memory")
	}
	for _, tile := range tiles {
		for _, B := range []int{1, 9, maxB} {
			for _, residual := range []bool{false, true} {
				fused := make([]DevF32, len(ws))
				alone := make([]DevF32, len(ws))
				ops := make([]MatMulOp, len(ws))
				for i, w := range ws {
					fused[i] = g.f32(base[i][:B*w.Rows], B, w.Rows)
					alone[i] = g.f32(base[i][:B*w.Rows], B, w.Rows)
					ops[i] = MatMulOp{W: w, X: x.Slice(0, B), Y: fused[i], Residual: residual, Scratch: scratch.Ptr, ScratchBytes: sb}
				}
				if err := run(ops, tile); err != nil {
					t.Fatalf("%v: %v", tile, err)
				}
				for i := range ops {
					one := ops[i]
					one.Y = alone[i]
					if err := run([]MatMulOp{one}, tile); err != nil {
						t.Fatalf("%v: %v", tile, err)
					}
				}
				for i := range ops {
					got, want := read(t, fused[i]), read(t, alone[i])
					for j := range want {
						if math.IsNaN(float64(want[j])) || math.Float32bits(got[j]) != math.Float32bits(want[j]) {
							t.Fatalf("%v, B %d, residual %v: segment %d, Y[%d][%d] = %g in one launch, %g alone",
								tile, B, residual, i, j/ws[i].Rows, j%ws[i].Rows, got[j], want[j])
						}
					}
				}
			}
		}
	}
	other := []MatMulOp{
		{W: ws[0], X: x.Slice(0, 1), Y: g.poisoned(1, ws[0].Rows), Scratch: scratch.Ptr, ScratchBytes: sb},
		{W: ws[1], X: x.Slice(0, 2), Y: g.poisoned(2, ws[1].Rows), Scratch: scratch.Ptr, ScratchBytes: sb},
	}
	if err := run(other, tiles[0]); err == nil {
		t.Error("segments of two inputs in one launch: no error")
	}
}

// TestGPUMatMulHalfRefuses checks that matMulHalf names what it cannot
// run.
func TestGPUMatMulHalfRefuses(t *testing.T) {
	g := newBuffers(t)
	w := DevMatrix{Type: gguf.TypeF16, Rows: 64, Cols: 256, Ptr: g.bytes(make([]byte, 64*256*2))}
	x, y := g.poisoned(4, 256), g.poisoned(4, 64)
	scratch := g.poisoned(1, int(MatMulHalfScratchBytes(4, 256)/4))
	good := MatMulOp{W: w, X: x, Y: y, Scratch: scratch.Ptr, ScratchBytes: MatMulHalfScratchBytes(4, 256)}
	checkRefuses(t, "matMulHalf", dev.matMulHalf, good, append([]refusal{
		{"type q8_0", func(op *MatMulOp) { op.W.Type = gguf.TypeQ8_0 }},
		{"type f32", func(op *MatMulOp) { op.W.Type = gguf.TypeF32 }},
		{"wide", func(op *MatMulOp) { op.W.Wide = true }},
		{"cols", func(op *MatMulOp) { op.W.Cols, op.X.Cols = 252, 252 }},
		{"weights alignment", func(op *MatMulOp) { op.W.Ptr += 2 }},
	}, halfRefusals...))
	for _, tile := range mmhTiles {
		if err := dev.matMulHalfIn([]MatMulOp{{W: w, X: x, Y: y}}, tile); err == nil {
			t.Errorf("matMulHalf in %v ran without scratch", tile)
		}
	}
}

// BenchmarkGPUMatMulHalf times the 16-bit tensor-core products, in each
// tile and in the one matMulHalf picks, at a prompt's batch of 512 and at
// 64 over Llama-3.1-8B's attention output (4096 × 4096), FFN up (14336 ×
// 4096), FFN down (4096 × 14336) and fused Q/K/V (6144 × 4096) shapes,
// beside MatVec in batches of MaxBatch for the same product; the
// TFLOP/s metric counts 2·B·rows·cols per call (the rounding of X
// included).
func BenchmarkGPUMatMulHalf(b *testing.B) {
	for _, typ := range []gguf.Type{gguf.TypeF16, gguf.TypeBF16} {
		for _, shape := range [][2]int{{4096, 4096}, {14336, 4096}, {4096, 14336}, {6144, 4096}} {
			rows, cols := shape[0], shape[1]
			rng := rand.New(rand.NewPCG(5, uint64(typ)))
			g := newBuffers(b)
			w := g.matrix(typ, randomRows(rng, typ, rows, cols), rows, cols, false)
			const maxB = 512
			x := g.f32(randF32(rng, maxB*cols), maxB, cols)
			y := g.poisoned(maxB, rows)
			scratch := g.poisoned(1, int(MatMulHalfScratchBytes(maxB, cols)/4))
			for _, B := range []int{64, 512} {
				op := MatMulOp{W: w, X: x.Slice(0, B), Y: y.Slice(0, B), Scratch: scratch.Ptr, ScratchBytes: MatMulHalfScratchBytes(maxB, cols)}
				var paths []benchPath
				for _, tile := range mmhTiles {
					if dev.mmhTileRuns(tile) {
						paths = append(paths, benchPath{"mmh" + tile.String(), func() error { return dev.matMulHalfIn([]MatMulOp{op}, tile) }})
					}
				}
				picked := mmhTileFor(B, rows, dev.Context().Multiprocessors())
				paths = append(paths, benchPath{"picked-" + picked.String(), func() error { return dev.matMulHalf(op) }})
				paths = append(paths, benchPath{"matvec", func() error { return dev.matVecChunks(MatVecSeg{W: w, Y: y.Slice(0, B)}, x.Slice(0, B), false) }})
				for _, p := range paths {
					b.Run(fmt.Sprintf("%v/%dx%dx%d/%s", typ, B, rows, cols, p.name), func(b *testing.B) {
						timeLaunches(b, 2*float64(B)*float64(rows)*float64(cols), p.run)
					})
				}
			}
		}
	}
}
