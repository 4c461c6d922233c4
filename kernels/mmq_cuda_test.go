//go:build cuda

package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"llmserve/gguf"
	"llmserve/internal/cuda"
)

// TestGPUMatMulLayout checks that mmqParams (Go) and MmqParams (mmq.cu)
// agree, and the shared-memory strides mmqShared sizes the stages with:
// mmq_layout writes the C struct's size and field offsets, then the
// strides.
func TestGPUMatMulLayout(t *testing.T) {
	var p mmqParams
	want := []layoutField{
		{"sizeof", unsafe.Sizeof(p)},
		{"w", unsafe.Offsetof(p.W)},
		{"xq", unsafe.Offsetof(p.XQ)},
		{"xd", unsafe.Offsetof(p.XD)},
		{"y", unsafe.Offsetof(p.Y)},
		{"row_bytes", unsafe.Offsetof(p.RowBytes)},
		{"rows", unsafe.Offsetof(p.Rows)},
		{"cols", unsafe.Offsetof(p.Cols)},
		{"batch", unsafe.Offsetof(p.Batch)},
		{"kpad", unsafe.Offsetof(p.KPad)},
		{"accumulate", unsafe.Offsetof(p.Accumulate)},
		{"type", unsafe.Offsetof(p.Type)},
		{"split_stages", unsafe.Offsetof(p.SplitStages)},
	}
	for _, k := range mmqKinds {
		want = append(want, layoutField{"stride of " + k.name, uintptr(k.stride)})
	}
	want = append(want, layoutField{"MMQ_XSTRIDE", mmqXStride})
	checkLayout(t, "mmq_layout", want)
}

// mmqBatches are the batch sizes every product shape is tested at: below,
// at and past the 64-row batch tile and its multiples.
var mmqBatches = []int{1, 2, 3, 7, 9, 63, 65, 127, 511, 512, 513}

// TestGPUMatMul checks the tensor-core products, in each tile, against
// the f64 reference of the dequantized weights, on random weights and
// activations, for every batch of mmqBatches, at shapes that are not
// multiples of the tiles or of the 128-value k stage (the last stage half
// full), of 1, 33 and 100 rows, and at real ones (2048×2048, 8192×2048),
// for every type MatMul reads (Q6_K and Q8_0 also in the wide layout the
// engine stores them in): NMSE ≤ 1e-6 against the
// reference with the same 8-bit activations; ≤ 1e-3 against the f32
// activations (rounding to 8 bits costs about 2e-5 on normal values, but
// every row of W sees the same rounding of an activation row, so a small
// batch's figure varies widely: 1.1e-4 was seen on Q4_K at B=1; checked
// on products of at least mmqMinF32Values values). Large
// shapes are checked on their first and last rows and 48 random ones, and
// for unwritten values everywhere (the large shapes at the batches of
// mmqLargeBatch). Y = X·Wᵀ is written, and added to Y (Residual) at two
// batches. Every variant of mmqTestVariants runs each product twice, and
// the two must agree bit for bit; the unsplit products in the baseline
// tiles must equal, bit for bit, the same rows of the product at the
// largest batch in the smallest tile. The largest NMSE of each shape is
// logged.
func TestGPUMatMul(t *testing.T) {
	type kind struct {
		typ  gguf.Type
		wide bool
	}
	kinds := []kind{
		{gguf.TypeQ4_0, false}, {gguf.TypeQ4_1, false}, {gguf.TypeQ5_0, false}, {gguf.TypeQ5_1, false},
		{gguf.TypeQ8_0, false}, {gguf.TypeQ8_0, true},
		{gguf.TypeQ2_K, false}, {gguf.TypeQ3_K, false}, {gguf.TypeQ4_K, false}, {gguf.TypeQ5_K, false},
		{gguf.TypeQ6_K, false}, {gguf.TypeQ6_K, true},
	}
	shapes := [][2]int{{1, 320}, {1, 256}, {128, 64}, {64, 128}, {33, 768}, {100, 320}, {100, 1280}, {67, 320}, {130, 1088}, {67, 512}, {200, 768}, {2048, 2048}, {8192, 2048}}
	maxB := mmqBatches[len(mmqBatches)-1]
	for _, k := range kinds {
		for _, shape := range shapes {
			rows, cols := shape[0], shape[1]
			w := DevMatrix{Type: k.typ, Rows: rows, Cols: cols, Wide: k.wide}
			if !MatMulSupports(w) {
				continue // K-quants and the wide layout need whole 256-value blocks
			}
			name := fmt.Sprintf("%v/%dx%d", k.typ, rows, cols)
			if k.wide {
				name = fmt.Sprintf("%v-wide/%dx%d", k.typ, rows, cols)
			}
			t.Run(name, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(rows), uint64(cols)+uint64(k.typ)))
				g := newBuffers(t)
				data := randomRows(rng, k.typ, rows, cols)
				w := g.matrix(k.typ, data, rows, cols, k.wide)
				if !MatMulSupports(w) {
					t.Fatalf("MatMul reads no %v matrix of %d×%d (wide %v)", k.typ, rows, cols, k.wide)
				}
				x := randF32(rng, maxB*cols)
				xq := refQ8(x)
				checked := mmqCheckedRows(rng, rows)
				wantQ := mmqReference(k.typ, data, rows, cols, xq, checked)
				wantF := mmqReference(k.typ, data, rows, cols, x, checked)
				dx := g.f32(x, maxB, cols)
				scratch := g.poisoned(1, int(MatMulScratchBytes(maxB, cols)/4))
				// The baseline the unsplit products in the baseline tiles
				// must match bit for bit: each value sums its blocks in the
				// same order in those tiles at every batch.
				y0 := g.poisoned(maxB, rows)
				if err := dev.matMul(MatMulOp{W: w, X: dx, Y: y0, Scratch: scratch.Ptr, ScratchBytes: int64(scratch.Len()) * 4}, mmqVariant{mmqTiles[0], 1}); err != nil {
					t.Fatal(err)
				}
				baseline := read(t, y0)
				var worstQ, worstF float64
				for _, v := range mmqTestVariants() {
					for _, B := range mmqBatches {
						if rows >= 2048 && !mmqLargeBatch(B) {
							continue
						}
						for _, residual := range []bool{false, true} {
							if residual && B != 9 && B != maxB {
								continue
							}
							t.Run(fmt.Sprintf("%v/B%d/residual=%v", v, B, residual), func(t *testing.T) {
								var base []float32
								if residual {
									base = randF32(rng, B*rows)
								}
								// Run twice: a product must give the same
								// bits every time (split parts are added in
								// a fixed order).
								var runs [2][]float32
								for i := range runs {
									y := g.poisoned(B, rows)
									if residual {
										y = g.f32(base, B, rows)
									}
									op := MatMulOp{W: w, X: dx.Slice(0, B), Y: y, Residual: residual,
										Scratch: scratch.Ptr, ScratchBytes: int64(scratch.Len()) * 4}
									var err error
									if v.tile.rows == 0 {
										err = dev.MatMul(op)
									} else {
										err = dev.matMul(op, v)
									}
									if err != nil {
										t.Fatal(err)
									}
									runs[i] = read(t, y)
								}
								all := runs[0]
								checkWritten(t, all, rows)
								if differ := mmqDiffer(runs[0], runs[1]); differ > 0 {
									t.Errorf("%d of %d values differ between two runs of the same product", differ, len(all))
								}
								if !residual && v.parts == 1 && !v.tile.cv && v.tile.warpCols == 32 && v.tile.batch >= 64 {
									if differ := mmqDiffer(all, baseline[:len(all)]); differ > 0 {
										t.Errorf("%d of %d values differ from the same product in tiles of %v at batch %d", differ, len(all), mmqTiles[0], maxB)
									}
								}
								got := checkedValues(all, base, rows, checked)
								q, f := wantQ[:len(got)], wantF[:len(got)]
								checkNMSE(t, "8-bit activations", got, q, 1e-6)
								worstQ = max(worstQ, gpuNMSE(got, q))
								if len(got) >= mmqMinF32Values {
									checkNMSE(t, "f32 activations", got, f, 1e-3)
									worstF = max(worstF, gpuNMSE(got, f))
								}
							})
						}
					}
				}
				t.Logf("largest NMSE: %.3g against 8-bit activations, %.3g against f32", worstQ, worstF)
			})
		}
	}
}

// mmqTestVariants are the ways TestGPUMatMul runs every product: each
// tile unsplit and split in (up to) 3 parts, and as MatMul chooses (the
// zero tile).
func mmqTestVariants() []mmqVariant {
	var out []mmqVariant
	for _, t := range mmqTiles {
		out = append(out, mmqVariant{t, 1}, mmqVariant{t, 3})
	}
	return append(out, mmqVariant{})
}

func (v mmqVariant) String() string {
	if v.tile.rows == 0 {
		return "default"
	}
	return fmt.Sprintf("%v/parts%d", v.tile, v.parts)
}

// mmqLargeBatch says whether the large shapes are tested at batch B (a
// subset of mmqBatches, to keep the test's run short).
func mmqLargeBatch(B int) bool {
	switch B {
	case 1, 9, 63, 65, 511, 513:
		return true
	}
	return false
}

// mmqDiffer is how many values of a and b differ in their bits.
func mmqDiffer(a, b []float32) int {
	n := 0
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			n++
		}
	}
	return n
}

// mmqMinF32Values is the fewest values a product's NMSE against the f32
// activations is checked on: the rounding error of a value is about 0.5%
// of the size of its terms, so one value that its terms happen to cancel
// to near zero has a large NMSE on its own (the CPU references of the
// one value of the 1×256 Q6_K product at B=1 are 0.08 apart in NMSE), while the
// NMSE of 64 values or more is the rounding's (at most 1.1e-4 on these
// shapes and seeds, from the CPU references).
// Smaller products are still held to 1e-6 against the 8-bit activations.
const mmqMinF32Values = 64

// mmqCheckedRows is every row of a small matrix, or the first and last 8
// rows and 48 random ones of a large one.
func mmqCheckedRows(rng *rand.Rand, rows int) []int {
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

// mmqReference is the f64 product of the listed rows of W (dequantized by
// gguf) with every row of x: out[b*len(checked)+i] is row b of x times
// row checked[i].
func mmqReference(typ gguf.Type, data []byte, rows, cols int, x []float32, checked []int) []float64 {
	rb, _ := typ.RowBytes(int64(cols))
	B := len(x) / cols
	out := make([]float64, B*len(checked))
	for i, r := range checked {
		wr := refDequantRow(typ, data[int64(r)*rb:int64(r+1)*rb], cols)
		for b := 0; b < B; b++ {
			xb := x[b*cols : (b+1)*cols]
			var s float64
			for k, v := range wr {
				s += v * float64(xb[k])
			}
			out[b*len(checked)+i] = s
		}
	}
	return out
}

// TestGPUMatMulRefuses checks that MatMul names what it cannot run.
func TestGPUMatMulRefuses(t *testing.T) {
	g := newBuffers(t)
	w := DevMatrix{Type: gguf.TypeQ8_0, Rows: 64, Cols: 256, Ptr: g.bytes(make([]byte, 64*272))}
	x, y := g.poisoned(4, 256), g.poisoned(4, 64)
	scratch := g.poisoned(1, int(MatMulScratchBytes(4, 256)/4))
	good := MatMulOp{W: w, X: x, Y: y, Scratch: scratch.Ptr, ScratchBytes: MatMulScratchBytes(4, 256)}
	checkRefuses(t, "MatMul", dev.MatMul, good, []refusal{
		{"type", func(op *MatMulOp) { op.W.Type = gguf.TypeF16 }},
		{"wide type", func(op *MatMulOp) { op.W.Type, op.W.Wide = gguf.TypeQ4_K, true }},
		{"k-quant cols", func(op *MatMulOp) { op.W.Type, op.W.Cols, op.X.Cols = gguf.TypeQ4_K, 192, 192 }},
		{"cols", func(op *MatMulOp) { op.W.Cols, op.X.Cols = 224, 224 }},
		{"x shape", func(op *MatMulOp) { op.X.Cols = 128 }},
		{"y shape", func(op *MatMulOp) { op.Y.Rows = 3 }},
		{"scratch", func(op *MatMulOp) { op.ScratchBytes-- }},
		{"no scratch", func(op *MatMulOp) { op.Scratch = 0 }},
		{"alignment", func(op *MatMulOp) { op.W.Ptr += 2 }},
		{"wide", func(op *MatMulOp) { op.W.Cols, op.X.Cols = 192, 192; op.W.Wide = true }},
	})
}

// BenchmarkGPUMatMul times every variant of the tensor-core products
// (each tile of mmqTiles unsplit and split as mmqSplit chooses, MatMul's
// own choice, and MatVec in batches of MaxBatch, the path named mvq) at
// the batches of mmqBenchBatches over Llama-3.2-1B's shapes (2048×2048,
// 8192×2048, 2048×8192) and Llama-3.1-8B's (4096×4096, 14336×4096,
// 4096×14336, 1024×4096), for Q4_K, Q6_K and Q8_0 in the wide layout the
// engine stores them in, and Q4_0. It prints one line per (type, shape,
// batch) with the variants sorted fastest first (TFLOP/s, counting
// 2·B·rows·cols per call, the rounding of X included, timed with device
// events), then a summary of the best variant beside MatMul's choice per
// line. Run it once: -test.benchtime=1x.
func BenchmarkGPUMatMul(b *testing.B) {
	shapes := [][2]int{{2048, 2048}, {8192, 2048}, {2048, 8192}, {4096, 4096}, {14336, 4096}, {4096, 14336}, {1024, 4096}}
	types := []gguf.Type{gguf.TypeQ4_K, gguf.TypeQ6_K, gguf.TypeQ8_0, gguf.TypeQ4_0}
	maxB := mmqBenchBatches[len(mmqBenchBatches)-1]
	start, end := benchEvent(b), benchEvent(b)
	var summary []string
	for _, shape := range shapes {
		rows, cols := shape[0], shape[1]
		for _, typ := range types {
			rng := rand.New(rand.NewPCG(5, uint64(typ)))
			g := newBuffers(b)
			wide := Widens(typ, cols) // as the engine stores Q8_0 and Q6_K
			w := g.matrix(typ, randomRows(rng, typ, rows, cols), rows, cols, wide)
			kind := mmqKind(w)
			x := g.f32(randF32(rng, maxB*cols), maxB, cols)
			y := g.poisoned(maxB, rows)
			scratch := g.poisoned(1, int(MatMulScratchBytes(maxB, cols)/4))
			for _, B := range mmqBenchBatches {
				op := MatMulOp{W: w, X: x.Slice(0, B), Y: y.Slice(0, B), Scratch: scratch.Ptr, ScratchBytes: MatMulScratchBytes(maxB, cols)}
				def := mmqTileFor(kind, B)
				stages := mmqKPad(cols) / mmqStage
				defParts, _ := mmqSplit(stages, rows, B, ceilDiv(rows, def.rows)*ceilDiv(B, def.batch), def.warps(), dev.ctx.Multiprocessors())
				if mmqDefault(kind, B).parts == 1 {
					defParts = 1
				}
				paths := []benchPath{{fmt.Sprintf("default(%v/p%d)", def, defParts), func() error { return dev.MatMul(op) }}}
				for _, tile := range mmqTiles {
					v := mmqVariant{tile, 1}
					paths = append(paths, benchPath{tile.String() + "/p1", func() error { return dev.matMul(op, v) }})
					parts, _ := mmqSplit(stages, rows, B, ceilDiv(rows, tile.rows)*ceilDiv(B, tile.batch), tile.warps(), dev.ctx.Multiprocessors())
					if parts > 1 {
						v := mmqVariant{tile, 0}
						paths = append(paths, benchPath{fmt.Sprintf("%v/p%d", tile, parts), func() error { return dev.matMul(op, v) }})
					}
				}
				if B <= 64 {
					paths = append(paths, benchPath{"mvq", func() error {
						for b0 := 0; b0 < B; b0 += MaxBatch {
							n := min(MaxBatch, B-b0)
							if err := dev.MatVec(w, x.Slice(b0, b0+n), y.Slice(b0, b0+n)); err != nil {
								return err
							}
						}
						return nil
					}})
				}
				res := timePaths(b, start, end, paths, 2*float64(B)*float64(rows)*float64(cols))
				deflt := res[0].tflops
				fmt.Println(benchLine(fmt.Sprintf("mmq-bench %v %dx%d B=%d", kind, rows, cols, B), res))
				summary = append(summary, fmt.Sprintf("mmq-best %v %dx%d B=%d: %s %.1f, default %.1f", kind, rows, cols, B, res[0].name, res[0].tflops, deflt))
			}
		}
	}
	for _, l := range summary {
		fmt.Println(l)
	}
}

// mmqBenchBatches are the batches BenchmarkGPUMatMul times: decode
// batches and prompts.
var mmqBenchBatches = []int{1, 8, 16, 32, 64, 128, 512}

// benchEvent is a timing event destroyed when b ends.
func benchEvent(b *testing.B) *cuda.Event {
	e, err := dev.ctx.NewEvent()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Destroy() })
	return e
}
