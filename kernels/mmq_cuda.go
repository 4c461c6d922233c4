//go:build cuda

package kernels

import (
	"fmt"
	"unsafe"

	"llmserve/gguf"
	"llmserve/internal/cuda"
)

// The tensor-core products of mmq.cu: Y = X·Wᵀ for a batch of activation
// rows at once, with int8 mma.sync.

// mmqStage is the values of one k stage (32·MMQ_KB in mmq.cu).
const mmqStage = 128

// mmqKinds are the weight layouts of mmq.cu with the shared-memory row
// stride of their stage (WLayout<T>::stride).
var mmqKinds = []struct {
	name   string
	stride int
}{
	{"q4_0", 80}, {"q8_0", 144}, {"q8_0_wide", 144}, {"q4_k", 80}, {"q5_k", 112},
	{"q6_k_wide", 144}, {"q6_k", 144}, {"q4_1", 80}, {"q5_0", 112}, {"q5_1", 112}, {"q2_k", 48}, {"q3_k", 112},
}

// mmqXStride is MMQ_XSTRIDE: the shared-memory row stride of a stage's
// activations.
const mmqXStride = 144

// mmqShared is the dynamic shared memory of mmq_<kind>_<tile>: two stages
// (Stage<T, BM, BN> in mmq.cu) of tile.rows weight rows of the kind's
// stride, tile.batch activation rows and their 4 (d, d·Σq) pairs; with cv
// also the converted stage (Conv<T, BM>): tile.rows rows of 4 blocks of 32
// values at the activations' stride, and a scale and a min per block (f32,
// or f32 pairs for the 16-value scale types).
func mmqShared(kind string, t mmqTile) int {
	for _, k := range mmqKinds {
		if k.name == kind {
			n := 2 * (t.rows*k.stride + t.batch*mmqXStride + t.batch*4*8)
			if t.cv {
				scale := 4
				if mmqSub16(kind) {
					scale = 8
				}
				n += t.rows*mmqXStride + 2*t.rows*4*scale
			}
			return n
		}
	}
	return 0
}

// mmqSub16 says whether kind has a scale per 16 values (WLayout::sub16).
func mmqSub16(kind string) bool {
	switch kind {
	case "q2_k", "q3_k", "q6_k", "q6_k_wide":
		return true
	}
	return false
}

// mmqKernelNames are the kernels of mmq.fatbin.
func mmqKernelNames() []string {
	names := []string{"mmq_layout", "mmq_quantize", "mmq_reduce"}
	for _, k := range mmqKinds {
		for _, t := range mmqTiles {
			names = append(names, "mmq_"+k.name+"_"+t.String())
		}
	}
	return names
}

// mmqTileFor is the tile MatMul uses for a batch of B rows of weights of
// layout kind: the smallest that covers the batch up to 128 rows; past
// that 128×128 for the 32-value block types and 64×128 for the K-quants.
// On the H200 at B = 512 (BenchmarkGPUMatMul, TFLOP/s in tiles of 64×64,
// 64×128, 128×128): Q8_0 4096×4096 110, 123, 139 and 14336×4096 117, 132,
// 136; Q4_0 102, 114, 128 and 111, 123, 123; Q4_K 102, 104, 109 and 110,
// 109, 104. Q4_1, Q5_0 and Q5_1 follow Q4_0, and Q2_K, Q3_K and Q6_K
// Q4_K (not measured yet; the 16-value types do twice the mma
// instructions of a block and hold more registers, as Q4_K does).
//
// Up to 32 rows the batch runs in narrow tiles of 64 weight rows (16 or
// 32 batch columns, a warp per 32 rows) so that a decode batch makes
// enough blocks, and mmqSplit splits the k range on top when that is
// still too few.
func mmqTileFor(kind string, B int) mmqTile {
	switch {
	case B <= 16:
		return mmqTiles[3]
	case B <= 32:
		return mmqTiles[5]
	case B <= 64:
		return mmqTiles[0]
	case B <= 128 || mmqKQuant(kind):
		return mmqTiles[1]
	}
	return mmqTiles[2]
}

// mmqKQuant says whether kind is one of the 256-value super-block layouts.
func mmqKQuant(kind string) bool {
	switch kind {
	case "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "q6_k_wide":
		return true
	}
	return false
}

// MatMulOp is one tensor-core product Y = X·Wᵀ (Y += X·Wᵀ with Residual):
// X is B × W.Cols f32 activations, Y is B × W.Rows. X is first rounded to
// 8-bit blocks of 32 values (d = max|v|/127, as MatVec does) into Scratch,
// which holds MatMulScratchBytes(B, W.Cols) bytes. W is Q4_0, Q4_1, Q5_0,
// Q5_1 or Q8_0 (as stored, or Q8_0 in the wide layout) with rows of a
// multiple of 64 values, or Q2_K, Q3_K, Q4_K, Q5_K or Q6_K (as stored, or
// Q6_K in the wide layout; rows of whole 256-value blocks), at a 16-byte
// aligned address.
//
// For the 16-bit products (mmh.cu), Rounded says that Scratch holds X
// already rounded to W's type (B × W.Cols values, as a GLU launch writes
// them, matMulHalfGLU): X gives only the shape, and no rounding runs.
type MatMulOp struct {
	W            DevMatrix
	X, Y         DevF32
	Residual     bool
	Scratch      cuda.DevPtr
	ScratchBytes int64
	Rounded      bool
}

// mmqParams mirrors struct MmqParams in mmq.cu field for field; it is
// passed to the kernel by value (TestGPUMatMulLayout checks that the two
// agree).
type mmqParams struct {
	W          uint64 // const uint8_t *w
	XQ         uint64 // const int8_t *xq
	XD         uint64 // const float2 *xd
	Y          uint64 // float *y
	RowBytes   int64  // long long row_bytes
	Rows       int32
	Cols       int32
	Batch      int32
	KPad       int32
	Accumulate int32
	Type       int32
	// SplitStages is the k stages of each part of a split product
	// (blockIdx.z picks the part); 0: one part.
	SplitStages int32
	Pad         int32
}

// mmqParamsSize is sizeof(MmqParams).
const mmqParamsSize = 72

// Compile-time check of the size the launch copies.
var _ [mmqParamsSize - unsafe.Sizeof(mmqParams{})]struct{}
var _ [unsafe.Sizeof(mmqParams{}) - mmqParamsSize]struct{}

// args packs p into the 8-byte parameter slots of a launch: the driver
// reads the struct's bytes from the first slot on.
func (p *mmqParams) args() []cuda.Arg {
	a := *(*[mmqParamsSize / 8]cuda.Arg)(unsafe.Pointer(p))
	return a[:]
}

// mmqKPad is cols rounded up to a whole k stage: the row stride of the
// rounded activations.
func mmqKPad(cols int) int { return ceilDiv(cols, mmqStage) * mmqStage }

// MatMulScratchBytes is the scratch a MatMulOp of B rows of cols values
// needs: B × kpad 8-bit values, then B × kpad/32 pairs of f32 (the
// block's scale, and the scale times the sum of its values), then, from
// the next 16-byte boundary, mmqSplitBytes for the partial sums of a split
// product (mmqSplit keeps parts × B × rows f32 within it).
func MatMulScratchBytes(B, cols int) int64 {
	return mmqPartialsAt(B, cols) + mmqSplitBytes
}

// mmqPartialsAt is the offset in the scratch of a split product's partial
// sums: past the rounded activations, 16-byte aligned.
func mmqPartialsAt(B, cols int) int64 {
	k := int64(mmqKPad(cols))
	n := int64(B)*k + int64(B)*(k/32)*8
	return (n + 15) &^ 15
}

// MatMulSupports says whether MatMul reads w.
func MatMulSupports(w DevMatrix) bool { return mmqKind(w) != "" }

// mmqKind is the layout of w as mmq.cu names it (mmqKinds), or "" when no
// kernel reads it.
func mmqKind(w DevMatrix) string {
	if w.Cols <= 0 || w.Cols%64 != 0 || w.Rows <= 0 {
		return ""
	}
	switch {
	case w.Wide:
		if !Widens(w.Type, w.Cols) {
			return ""
		}
		switch w.Type {
		case gguf.TypeQ8_0:
			return "q8_0_wide"
		case gguf.TypeQ6_K:
			return "q6_k_wide"
		}
		return ""
	case w.Type == gguf.TypeQ4_0:
		return "q4_0"
	case w.Type == gguf.TypeQ4_1:
		return "q4_1"
	case w.Type == gguf.TypeQ5_0:
		return "q5_0"
	case w.Type == gguf.TypeQ5_1:
		return "q5_1"
	case w.Type == gguf.TypeQ8_0:
		return "q8_0"
	case w.Cols%256 != 0:
		return ""
	case w.Type == gguf.TypeQ2_K:
		return "q2_k"
	case w.Type == gguf.TypeQ3_K:
		return "q3_k"
	case w.Type == gguf.TypeQ4_K:
		return "q4_k"
	case w.Type == gguf.TypeQ5_K:
		return "q5_k"
	case w.Type == gguf.TypeQ6_K:
		return "q6_k"
	}
	return ""
}

func (op *MatMulOp) check() (string, error) {
	w, x, y := op.W, op.X, op.Y
	name := mmqKind(w)
	if name == "" {
		return "", fmt.Errorf("kernels: matmul: %v matrix %d×%d (wide %v): want Q4_0, Q4_1, Q5_0, Q5_1 or Q8_0 with rows of a positive multiple of 64 values, or Q2_K to Q6_K of 256 (wide: Q8_0 or Q6_K of 256)", w.Type, w.Rows, w.Cols, w.Wide)
	}
	if w.Ptr%16 != 0 || op.Scratch%16 != 0 {
		return "", fmt.Errorf("kernels: matmul: weights at %#x, scratch at %#x: want 16-byte aligned addresses", uint64(w.Ptr), uint64(op.Scratch))
	}
	if x.Cols != w.Cols || y.Cols != w.Rows || x.Rows != y.Rows || x.Rows < 1 {
		return "", fmt.Errorf("kernels: matmul: W %d×%d, X %d×%d, Y %d×%d: want X B×%d, Y B×%d, B ≥ 1",
			w.Rows, w.Cols, x.Rows, x.Cols, y.Rows, y.Cols, w.Cols, w.Rows)
	}
	if x.Rows > 65535 { // the grid's y extent of mmq_quantize
		return "", fmt.Errorf("kernels: matmul: batch of %d rows: at most 65535", x.Rows)
	}
	if need := MatMulScratchBytes(x.Rows, w.Cols); op.Scratch == 0 || op.ScratchBytes < need {
		return "", fmt.Errorf("kernels: matmul: scratch of %d bytes for %d rows of %d values: want %d", op.ScratchBytes, x.Rows, w.Cols, need)
	}
	return name, nil
}

// MatMul queues op: the rounding of X into the scratch, then the product.
func (d *Device) MatMul(op MatMulOp) error {
	kind := mmqKind(op.W)
	return d.matMul(op, mmqDefault(kind, op.X.Rows))
}

// mmqDefault is how MatMul runs a product of B rows of layout kind: in
// mmqTileFor's tile, split as mmqSplit chooses.
func mmqDefault(kind string, B int) mmqVariant {
	return mmqVariant{tile: mmqTileFor(kind, B)}
}

// mmqVariant is how a product runs: its tile, and parts, the k range split
// it asks for (0: mmqSplit's choice; n: n parts, or fewer where the
// stages or the scratch allow fewer).
type mmqVariant struct {
	tile  mmqTile
	parts int
}

// matMul runs op as v says.
func (d *Device) matMul(op MatMulOp, v mmqVariant) error {
	kind, err := op.check()
	if err != nil {
		return err
	}
	if err := d.mmqQuantize(op.X, op.Scratch); err != nil {
		return err
	}
	return d.mmqLaunch(op, kind, v)
}

// mmqQuantize queues mmq_quantize: x rounded to the 8-bit blocks the
// products read, into scratch (MatMulScratchBytes(x.Rows, x.Cols) bytes).
func (d *Device) mmqQuantize(x DevF32, scratch cuda.DevPtr) error {
	B, cols := x.Rows, x.Cols
	kpad := mmqKPad(cols)
	return d.launch("mmq_quantize", cuda.Dim3{X: ceilDiv(kpad/32, 8), Y: B}, cuda.Dim3{X: 256}, 0,
		cuda.P(x.Ptr), cuda.P(scratch), cuda.P(scratch.Add(int64(B)*int64(kpad))), cuda.I(cols), cuda.I(kpad), cuda.I(B))
}

// mmqLaunch queues the product of op (checked, of layout kind) on
// activations already rounded into op.Scratch: one launch of the tile's
// kernel, or for a split product that launch writing its parts' partial
// sums to the scratch and mmq_reduce adding them into Y in part order.
func (d *Device) mmqLaunch(op MatMulOp, kind string, v mmqVariant) error {
	B, rows, cols := op.X.Rows, op.W.Rows, op.W.Cols
	kpad := mmqKPad(cols)
	rb, err := op.W.RowBytes()
	if err != nil {
		return fmt.Errorf("kernels: matmul: %w", err)
	}
	tile := v.tile
	stages := kpad / mmqStage
	blocks := ceilDiv(rows, tile.rows) * ceilDiv(B, tile.batch)
	parts, per := mmqSplit(stages, rows, B, blocks, tile.warps(), d.ctx.Multiprocessors())
	if v.parts > 0 {
		parts, per = mmqSplitParts(stages, rows, B, v.parts)
	}
	p := mmqParams{
		W: uint64(op.W.Ptr), XQ: uint64(op.Scratch), XD: uint64(op.Scratch.Add(int64(B) * int64(kpad))), Y: uint64(op.Y.Ptr), RowBytes: rb,
		Rows: int32(rows), Cols: int32(cols), Batch: int32(B), KPad: int32(kpad),
		Accumulate: int32(boolInt(op.Residual)), Type: int32(op.W.typeCode()),
	}
	part := op.Scratch.Add(mmqPartialsAt(B, cols))
	if parts > 1 {
		p.Y, p.Accumulate, p.SplitStages = uint64(part), 0, int32(per)
	}
	name := "mmq_" + kind + "_" + tile.String()
	grid := cuda.Dim3{X: ceilDiv(rows, tile.rows), Y: ceilDiv(B, tile.batch), Z: parts}
	if err := d.launch(name, grid, cuda.Dim3{X: tile.threads()}, mmqShared(kind, tile), p.args()...); err != nil || parts == 1 {
		return err
	}
	n := B * rows
	return d.launch("mmq_reduce", cuda.Dim3{X: ceilDiv(n, 256)}, cuda.Dim3{X: 256}, 0,
		cuda.P(part), cuda.P(op.Y.Ptr), cuda.Arg(uint64(n)), cuda.I(parts), cuda.I(boolInt(op.Residual)))
}
