//go:build cuda

package kernels

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"llmserve/gguf"
	"llmserve/internal/cuda"
)

// MaxBatch is the most vectors one MatVec multiplies.
const MaxBatch = 64

// matvecTypes are the weight types the matvec and embedding kernels read.
var matvecTypes = []gguf.Type{
	gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16, gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeQ4_1,
	gguf.TypeQ5_0, gguf.TypeQ5_1, gguf.TypeQ2_K, gguf.TypeQ3_K, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K,
}

// matvecWarps is MV_WARPS in fused.cuh: warps per block.
const matvecWarps = 8

// matvecTiles are the batch-column tiles compiled per type (NB in matvec.cu
// and mvq.cu).
var matvecTiles = []int{1, 2, 4, 8}

// mvqTypes are the types the 8-bit kernels of mvq.cu read.
var mvqTypes = []gguf.Type{gguf.TypeQ4_0, gguf.TypeQ8_0, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K}

// SupportsType says whether MatVec and GetRows read weights of type t.
func SupportsType(t gguf.Type) bool { return slices.Contains(matvecTypes, t) }

func matvecKernels() []string {
	var names []string
	for _, t := range matvecTypes {
		for _, nb := range matvecTiles {
			names = append(names, "matvec_"+t.String()+"_"+strconv.Itoa(nb), "matvec_"+t.String()+"_"+strconv.Itoa(nb)+"_glu")
		}
		names = append(names, "get_rows_"+t.String())
		if isFloatType(t) {
			for _, nb := range matvecTiles {
				names = append(names, "matvec_elem_"+t.String()+"_"+strconv.Itoa(nb))
			}
			names = append(names, "get_rows_elem_"+t.String())
		}
	}
	return names
}

func mvqKernels() []string {
	var names []string
	for _, nb := range matvecTiles {
		names = append(names, "mvq_"+strconv.Itoa(nb))
	}
	return append(names, "mvh_1", "mvk_1", "mv8_1")
}

// mvqKernel is the mvq.cu kernel for op at batch tile nb, and its block
// size: at nb 1, mvh_1 for 16-bit floats, mvk_1 when every matrix is Q4_K
// or wide Q6_K (a Q4_K_M model's products), mv8_1 when every matrix is
// wide Q8_0, else mvq_1; mvq_<nb> above.
func mvqKernel(op MatVecOp, nb int) (string, int) {
	threads := mvqThreads(nb)
	if nb != 1 {
		return "mvq_" + strconv.Itoa(nb), threads
	}
	if isFloatType(op.Segs[0].W.Type) {
		return "mvh_1", threads
	}
	k, q8 := true, true
	for _, s := range op.Segs {
		c := s.W.typeCode()
		k = k && (c == int(gguf.TypeQ4_K) || c == int(gguf.TypeQ6_K)+typeWide)
		q8 = q8 && c == int(gguf.TypeQ8_0)+typeWide
	}
	switch {
	case k:
		return "mvk_1", threads
	case q8:
		return "mv8_1", threads
	}
	return "mvq_1", threads
}

func isFloatType(t gguf.Type) bool {
	return t == gguf.TypeF32 || t == gguf.TypeF16 || t == gguf.TypeBF16
}

// checkMatrix checks that w is a type the kernels read and returns its row
// size, and the kernel name prefix: quantized rows are read in 32-value
// chunks with 16-byte loads where the layout allows; float rows whose length
// is not a multiple of 32 are read value by value ("_elem").
func checkMatrix(op string, w DevMatrix) (int64, string, error) {
	if !SupportsType(w.Type) {
		return 0, "", fmt.Errorf("kernels: %s: weight type %v not supported on CUDA", op, w.Type)
	}
	if w.Cols <= 0 || w.Rows <= 0 || (w.Cols%32 != 0 && !isFloatType(w.Type)) {
		return 0, "", fmt.Errorf("kernels: %s: %v matrix %d×%d: columns must be a positive multiple of 32", op, w.Type, w.Rows, w.Cols)
	}
	rb, err := w.RowBytes()
	if err != nil {
		return 0, "", fmt.Errorf("kernels: %s: %w", op, err)
	}
	if w.Cols%32 != 0 {
		return rb, op + "_elem_" + w.Type.String(), nil
	}
	return rb, op + "_" + w.Type.String(), nil
}

// MatVecSeg is one matrix of a fused product: Y (B × W.Rows) receives W·x,
// plus Bias (W.Rows values) when its Ptr is set.
type MatVecSeg struct {
	W    DevMatrix
	Y    DevF32
	Bias DevF32
}

// MatVecOp is a fused matrix-vector product of one input X (B × Cols, B ≤
// MaxBatch) with one to three matrices of Cols columns:
//   - Norm, when its Ptr is set, RMS-normalizes each row of X and scales it
//     by Norm (Cols values) first, with Eps;
//   - Accumulate adds the products to Y instead of writing them (the
//     residual connection);
//   - GLU takes Segs = {gate, up} of equal shape and writes act(gate·x) ⊙
//     (up·x) to Segs[0].Y, act being Act (SiLU unless set); Segs[1].Y
//     (same shape) is scratch where the two cannot be computed in one
//     launch.
//
// For quantized weights the input is rounded to 8 bits in blocks of 32
// values (d = max|v|/127) on every path. On the 8-bit kernels (the common
// quantized types) a column's result does not depend on the batch; on the
// f32 ones the order of sums may differ with the batch size.
type MatVecOp struct {
	Segs       []MatVecSeg
	X          DevF32
	Norm       DevF32
	Eps        float32
	Accumulate bool
	GLU        bool
	// Act is the GLU's activation (SiLU unless set).
	Act GLUAct
	// Rope, when set, rotates Segs 0 and 1 (Q and K) and writes Segs 1 and
	// 2 (K and V) to the KV cache, as RopeStore does: in the product's
	// launch where it fuses (RopeEpilogue), else right after it.
	Rope *RopeEpilogue
}

// MatVec computes y[b, :] = W · x[b, :] for the x.Rows ≤ MaxBatch vectors
// of x; x is B × W.Cols, y is B × W.Rows.
func (d *Device) MatVec(w DevMatrix, x, y DevF32) error {
	return d.MatVecFused(MatVecOp{Segs: []MatVecSeg{{W: w, Y: y}}, X: x})
}

// MatVecFused runs op, in one launch where its types and shapes allow.
func (d *Device) MatVecFused(op MatVecOp) error {
	if op.Rope != nil {
		return d.matVecRope(op)
	}
	if err := op.check(); err != nil {
		return err
	}
	if d.mvqFits(op) {
		return d.launchMatVec(op, true)
	}
	sameType := true
	for _, s := range op.Segs[1:] {
		sameType = sameType && s.W.Type == op.Segs[0].W.Type
	}
	_, kernel, _ := checkMatrix("matvec", op.Segs[0].W)
	elem := strings.Contains(kernel, "_elem_")
	if sameType && !(op.GLU && elem) && op.rowsEven() {
		return d.launchMatVec(op, false)
	}
	// One product per matrix.
	for _, s := range op.Segs {
		one := op
		one.Segs, one.GLU = []MatVecSeg{s}, false
		if d.mvqFits(one) {
			if err := d.launchMatVec(one, true); err != nil {
				return err
			}
			continue
		}
		if err := d.launchMatVec(one, false); err != nil {
			return err
		}
	}
	if op.GLU && op.Act != GLUSiLU {
		return d.GLUPair(op.Segs[0].Y, op.Segs[1].Y, op.Segs[0].Y, op.Act)
	}
	if op.GLU {
		return d.SwiGLU(op.Segs[0].Y, op.Segs[1].Y, op.Segs[0].Y)
	}
	return nil
}

func (op *MatVecOp) check() error {
	if len(op.Segs) < 1 || len(op.Segs) > 3 || (op.GLU && len(op.Segs) != 2) {
		return fmt.Errorf("kernels: matvec: %d matrices (GLU %v): want 1 to 3, or 2 with GLU", len(op.Segs), op.GLU)
	}
	if op.GLU && op.Accumulate {
		return fmt.Errorf("kernels: matvec: GLU products are written, not accumulated")
	}
	if op.Act != GLUSiLU && (!op.GLU || op.Act != GLUGELUTanh) {
		return fmt.Errorf("kernels: matvec: activation %d (GLU %v): want SiLU, or GELU for a GLU", op.Act, op.GLU)
	}
	x := op.X
	for _, s := range op.Segs {
		w, y := s.W, s.Y
		if _, _, err := checkMatrix("matvec", w); err != nil {
			return err
		}
		if x.Cols != w.Cols || y.Cols != w.Rows || x.Rows != y.Rows || x.Rows < 1 || x.Rows > MaxBatch {
			return fmt.Errorf("kernels: matvec: W %d×%d, x %d×%d, y %d×%d: want x B×%d, y B×%d, 1 ≤ B ≤ %d",
				w.Rows, w.Cols, x.Rows, x.Cols, y.Rows, y.Cols, w.Cols, w.Rows, MaxBatch)
		}
		if s.Bias.Ptr != 0 && s.Bias.Len() != w.Rows {
			return fmt.Errorf("kernels: matvec: bias of %d values for %d rows", s.Bias.Len(), w.Rows)
		}
	}
	total := 0
	for _, s := range op.Segs {
		total += s.W.Rows
	}
	if ceilDiv(total, matvecWarps) > 65535 {
		return fmt.Errorf("kernels: matvec: %d rows: at most %d", total, 65535*matvecWarps)
	}
	if op.GLU && (op.Segs[0].W.Rows != op.Segs[1].W.Rows || op.Segs[0].W.Cols != op.Segs[1].W.Cols) {
		return fmt.Errorf("kernels: matvec: GLU gate of %d rows, up of %d", op.Segs[0].W.Rows, op.Segs[1].W.Rows)
	}
	if op.Norm.Ptr != 0 && op.Norm.Len() != x.Cols {
		return fmt.Errorf("kernels: matvec: norm of %d values for rows of %d", op.Norm.Len(), x.Cols)
	}
	return nil
}

// gluCode is MVArgs.glu (fused.cuh): 0 no GLU, 1 SiLU, 2 GELU (tanh).
func (op *MatVecOp) gluCode() int {
	switch {
	case !op.GLU:
		return 0
	case op.Act == GLUGELUTanh:
		return 2
	}
	return 1
}

// rowsEven says whether every matrix has an even number of rows, so that
// two-row warps never straddle two matrices.
func (op *MatVecOp) rowsEven() bool {
	for _, s := range op.Segs {
		if s.W.Rows%2 != 0 {
			return false
		}
	}
	return true
}

// mvqFits says whether op runs on the kernels of mvq.cu: on the 8-bit ones
// (their types, rows of whole 64-value groups, an even number of rows per
// matrix, one type for gate and up, and the staged input within the
// device's shared memory), or on the 16-bit float one (mvhFits).
func (d *Device) mvqFits(op MatVecOp) bool {
	if d.mvhFits(op) {
		return true
	}
	if op.X.Cols%64 != 0 || !op.rowsEven() || d.mvqTile(op.X.Rows, op.X.Cols) == 0 {
		return false
	}
	for _, s := range op.Segs {
		if !slices.Contains(mvqTypes, s.W.Type) {
			return false
		}
	}
	return !op.GLU || op.Segs[0].W.typeCode() == op.Segs[1].W.typeCode()
}

// mvhFits says whether op runs on mvh_1: one column, F16 or BF16 matrices
// of one type with an even number of rows of whole 256-value tiles, and
// the input, staged as floats, within the device's shared memory.
func (d *Device) mvhFits(op MatVecOp) bool {
	t := op.Segs[0].W.Type
	if op.X.Rows != 1 || op.X.Cols%256 != 0 || !op.rowsEven() || mvhShared(op.X.Cols) > d.maxShared ||
		(t != gguf.TypeF16 && t != gguf.TypeBF16) {
		return false
	}
	for _, s := range op.Segs {
		if s.W.Type != t {
			return false
		}
	}
	return true
}

// mvhShared is the dynamic shared memory of mvh_1: the column as floats.
func mvhShared(cols int) int { return 4 * cols }

// mvqShared is the dynamic shared memory of mvq_<nb>: nb columns of 8-bit
// values, each padded to a multiple of 2048 (xs16 in mvq.cu), and a (d, s)
// pair per 32 values.
func mvqShared(nb, cols int) int { return nb*ceilDiv(cols, 2048)*2048 + nb*cols/32*8 }

// mvqTile is the batch-column tile (NB) of mvq_<NB> for B columns of
// cols values: tile(B), halved until the staged input fits the shared
// memory; 0 when not even one column fits.
func (d *Device) mvqTile(B, cols int) int {
	nb := tile(B)
	for nb > 0 && mvqShared(nb, cols) > d.maxShared {
		nb /= 2
	}
	return nb
}

// tile is the batch-column tile (NB) for B columns.
func tile(B int) int {
	switch {
	case B == 1:
		return 1
	case B == 2:
		return 2
	case B <= 4:
		return 4
	}
	return 8
}

// launchMatVec launches one fused product: on mvq_<NB> (a grid of blocks
// looping over row pairs, by batch tiles) or on matvec_<TYPE>_<NB> (a grid
// over batch tiles and rows).
func (d *Device) launchMatVec(op MatVecOp, mvq bool) error {
	B, cols := op.X.Rows, op.X.Cols
	args := make([]cuda.Arg, 0, 31)
	total := 0
	for i := 0; i < 3; i++ {
		if i >= len(op.Segs) {
			args = append(args, 0, 0, 0, 0, 0, 0)
			continue
		}
		s := op.Segs[i]
		rb, _ := s.W.RowBytes()
		args = append(args, cuda.P(s.W.Ptr), cuda.P(s.Y.Ptr), cuda.P(s.Bias.Ptr), cuda.Arg(rb), cuda.I(s.W.Rows), cuda.I(s.W.typeCode()))
		total += s.W.Rows
	}
	if op.GLU {
		total = op.Segs[0].W.Rows
	}
	pairs := total
	if !op.GLU {
		pairs = total / 2
	}
	wpr := warpsPerPair(pairs, cols, d.ctx.Multiprocessors())
	args = append(args, cuda.I(len(op.Segs)), cuda.P(op.X.Ptr), cuda.P(op.Norm.Ptr), cuda.I(cols), cuda.I(B),
		cuda.F(op.Eps), cuda.I(boolInt(op.Accumulate)), cuda.I(op.gluCode()), cuda.I(wpr), 0, 0, 0)
	if mvq && op.Rope != nil && op.Rope.Fused() {
		n := len(args)
		args[n-3], args[n-2], args[n-1] = cuda.P(op.Rope.args.Ptr()), cuda.P(op.Rope.op.Pos.Ptr), cuda.P(op.Rope.op.Seq.Ptr)
	}
	nb := tile(B)
	if mvq {
		// One wave of blocks at most: a block stages the input once, then
		// loops over row pairs, so blocks beyond what the device holds at
		// once would only add a second, thin wave.
		// Pairs are dealt to the blocks in turn: at least one block per
		// multiprocessor while there are pairs to deal.
		nb = d.mvqTile(B, cols)
		name, threads := mvqKernel(op, nb)
		shared := mvqShared(nb, cols)
		if isFloatType(op.Segs[0].W.Type) {
			shared = mvhShared(cols)
		}
		resident, err := d.residentBlocks(name, threads, shared)
		if err != nil {
			return err
		}
		tiles := ceilDiv(B, nb)
		sms := d.ctx.Multiprocessors()
		blocks := min(max(ceilDiv(pairs*wpr, threads/32), min(sms, pairs)), max(resident/tiles, 1))
		return d.launch(name, cuda.Dim3{X: blocks, Y: tiles}, cuda.Dim3{X: threads}, shared, args...)
	}
	for _, s := range op.Segs {
		if s.W.Wide {
			return fmt.Errorf("kernels: matvec: a wide %v matrix of %d×%d is read by the 8-bit products only, which cannot run this product (batch %d)", s.W.Type, s.W.Rows, s.W.Cols, B)
		}
	}
	_, kernel, _ := checkMatrix("matvec", op.Segs[0].W)
	name := kernel + "_" + strconv.Itoa(nb)
	rowsPerWarp := 1 // GLU: one gate and up pair per warp
	switch {
	case op.GLU:
		name += "_glu"
	case nb >= 4 && !strings.Contains(kernel, "_elem_"):
		rowsPerWarp = 2
	}
	return d.launch(name, cuda.Dim3{X: ceilDiv(B, nb), Y: ceilDiv(total, matvecWarps*rowsPerWarp)}, cuda.Dim3{X: 32 * matvecWarps}, 0, args...)
}

// warpsPerPair is how many warps of mvq.cu share a row pair: doubled while
// the doubled count of warps still fits the 32 per SM that mvq_1 runs at
// once and the rows are long enough to split in tiles of 32 groups of 64
// values. It depends on the shape only, so every batch size sums in the
// same order. (Choosing the count with the fewest tile-sized steps
// instead, which shares the 8B gate/up pairs between two warps, measured
// slower.)
func warpsPerPair(pairs, cols, sms int) int {
	tiles := ceilDiv(cols/64, 32)
	w := 1
	for w < matvecWarps && 2*w <= tiles && pairs*2*w <= 32*sms {
		w *= 2
	}
	return w
}

// mvqThreads is the block size of mvq_<nb> (THREADS in mvq.cu).
func mvqThreads(nb int) int {
	if nb == 1 {
		return 512
	}
	return 256
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// GetRows writes row ids[b] of W, dequantized, to out[b, :] (an embedding
// lookup); ids outside [0, W.Rows) give zero rows.
func (d *Device) GetRows(w DevMatrix, ids DevI32, out DevF32) error {
	rb, kernel, err := checkMatrix("get_rows", w)
	if err != nil {
		return err
	}
	if w.Wide {
		return fmt.Errorf("kernels: get_rows: a wide %v matrix is read by the products only", w.Type)
	}
	if out.Cols != w.Cols || out.Rows != ids.Len || ids.Len < 1 {
		return fmt.Errorf("kernels: get_rows: W %d×%d, %d ids, out %d×%d: want out %d×%d",
			w.Rows, w.Cols, ids.Len, out.Rows, out.Cols, ids.Len, w.Cols)
	}
	threads := w.Cols / 32 // one per chunk
	if w.Cols%32 != 0 {
		threads = w.Cols // one per value
	}
	return d.launch(kernel, cuda.Dim3{X: ceilDiv(threads, 128), Y: ids.Len}, cuda.Dim3{X: 128}, 0,
		cuda.P(w.Ptr), cuda.P(ids.Ptr), cuda.P(out.Ptr), cuda.I(w.Cols), cuda.Arg(rb), cuda.I(w.Rows))
}
