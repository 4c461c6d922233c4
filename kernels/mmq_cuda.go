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

// mmqTile is the tile of Y one block of mmq_<type>_<rows>x<batch>
// computes: rows weight rows by batch activation rows, one warp per
// 32 × 32.
type mmqTile struct{ rows, batch int }

// mmqTiles are the tiles compiled per type.
var mmqTiles = []mmqTile{{64, 64}, {64, 128}, {128, 128}}

func (t mmqTile) String() string { return fmt.Sprintf("%dx%d", t.rows, t.batch) }

// threads is the block size: one warp per 32 × 32 sub-tile.
func (t mmqTile) threads() int { return 32 * (t.rows / 32) * (t.batch / 32) }

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
// stride, tile.batch activation rows and their 4 (d, d·Σq) pairs.
func mmqShared(kind string, t mmqTile) int {
	for _, k := range mmqKinds {
		if k.name == kind {
			return 2 * (t.rows*k.stride + t.batch*mmqXStride + t.batch*4*8)
		}
	}
	return 0
}

// mmqKernelNames are the kernels of mmq.fatbin.
func mmqKernelNames() []string {
	names := []string{"mmq_layout", "mmq_quantize"}
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
func mmqTileFor(kind string, B int) mmqTile {
	switch {
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
type MatMulOp struct {
	W            DevMatrix
	X, Y         DevF32
	Residual     bool
	Scratch      cuda.DevPtr
	ScratchBytes int64
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
}

// mmqParamsSize is sizeof(MmqParams).
const mmqParamsSize = 64

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
// block's scale, and the scale times the sum of its values).
func MatMulScratchBytes(B, cols int) int64 {
	k := int64(mmqKPad(cols))
	return int64(B)*k + int64(B)*(k/32)*8
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
	return d.matMul(op, mmqTileFor(mmqKind(op.W), op.X.Rows))
}

// matMul runs op in tiles of tile.
func (d *Device) matMul(op MatMulOp, tile mmqTile) error {
	kind, err := op.check()
	if err != nil {
		return err
	}
	if err := d.mmqQuantize(op.X, op.Scratch); err != nil {
		return err
	}
	return d.mmqLaunch(op, kind, tile)
}

// mmqQuantize queues mmq_quantize: x rounded to the 8-bit blocks the
// products read, into scratch (MatMulScratchBytes(x.Rows, x.Cols) bytes).
func (d *Device) mmqQuantize(x DevF32, scratch cuda.DevPtr) error {
	B, cols := x.Rows, x.Cols
	kpad := mmqKPad(cols)
	return d.launch("mmq_quantize", cuda.Dim3{X: ceilDiv(kpad/32, 8), Y: B}, cuda.Dim3{X: 256}, 0,
		cuda.P(x.Ptr), cuda.P(scratch), cuda.P(scratch.Add(int64(B)*int64(kpad))), cuda.I(cols), cuda.I(kpad), cuda.I(B))
}

// mmqLaunch queues the product of op (checked; kind its layout) in tiles
// of tile, on X already rounded into op.Scratch.
func (d *Device) mmqLaunch(op MatMulOp, kind string, tile mmqTile) error {
	B, cols := op.X.Rows, op.W.Cols
	kpad := mmqKPad(cols)
	rb, err := op.W.RowBytes()
	if err != nil {
		return fmt.Errorf("kernels: matmul: %w", err)
	}
	p := mmqParams{
		W: uint64(op.W.Ptr), XQ: uint64(op.Scratch), XD: uint64(op.Scratch.Add(int64(B) * int64(kpad))), Y: uint64(op.Y.Ptr), RowBytes: rb,
		Rows: int32(op.W.Rows), Cols: int32(cols), Batch: int32(B), KPad: int32(kpad),
		Accumulate: int32(boolInt(op.Residual)), Type: int32(op.W.typeCode()),
	}
	name := "mmq_" + kind + "_" + tile.String()
	return d.launch(name, cuda.Dim3{X: ceilDiv(op.W.Rows, tile.rows), Y: ceilDiv(B, tile.batch)}, cuda.Dim3{X: tile.threads()},
		mmqShared(kind, tile), p.args()...)
}
