package kernels

import "llmserve/gguf"

// The layouts and tiles of the products of quantized weights on the 16-bit
// tensor cores (mmhq.cu): which matrices they read, the shared memory a
// block stages and which tile a product runs in. Untagged, so that the CPU
// model of the staging (mmhq_model_test.go) tests the same figures the
// launches use.

// mmhqBK is MMHQ_BK: the k values of one stage.
const mmhqBK = 64

// mmhqKinds are the weight layouts of mmhq.cu, as its kernels name them,
// with the shared-memory row stride of a stage of raw weights in bytes
// (WRaw<K>::stride) and the 4-, 8- or 16-byte copies that fill a row of it
// (WRaw<K>::pieces).
var mmhqKinds = []struct {
	name           string
	typ            gguf.Type
	wide           bool
	stride, pieces int
}{
	{"q4_0", gguf.TypeQ4_0, false, 48, 9},
	{"q8_0", gguf.TypeQ8_0, false, 80, 17},
	{"q8_0_wide", gguf.TypeQ8_0, true, 80, 5},
	{"q4_k", gguf.TypeQ4_K, false, 48, 3},
	{"q6_k", gguf.TypeQ6_K, false, 120, 29},
	{"q6_k_wide", gguf.TypeQ6_K, true, 104, 14},
	{"q5_k", gguf.TypeQ5_K, false, 80, 5},
}

// mmhqKindOf is the layout of a t matrix of rows × cols values (wide: in
// the wide layout) as mmhq.cu names it, or "" when no kernel reads it:
// rows of a multiple of 64 values (of 256 for Q4_K, Q5_K, Q6_K and the
// wide layouts, whose stages are quarters of a 256-value block).
func mmhqKindOf(t gguf.Type, rows, cols int, wide bool) string {
	if rows <= 0 || cols <= 0 || cols%64 != 0 {
		return ""
	}
	if wide && !Widens(t, cols) {
		return ""
	}
	for _, k := range mmhqKinds {
		if k.typ != t || k.wide != wide {
			continue
		}
		if (t == gguf.TypeQ4_K || t == gguf.TypeQ5_K || t == gguf.TypeQ6_K) && cols%256 != 0 {
			return ""
		}
		return k.name
	}
	return ""
}

// mmhqRawStride is the raw stage row stride of kind, or 0.
func mmhqRawStride(kind string) int {
	for _, k := range mmhqKinds {
		if k.name == kind {
			return k.stride
		}
	}
	return 0
}

// mmhqTiles are the tiles compiled per layout (MMHQ_KERNELS in mmhq.cu),
// largest first: all stage 64 values, 3 stages in flight (mmhq.cu's
// staging is fixed at MMHQ_BK).
var mmhqTiles = []mmhTile{
	{128, 128, 64, 32, mmhqBK, 3, false, false}, {128, 64, 64, 32, mmhqBK, 3, false, false}, {64, 64, 32, 32, mmhqBK, 3, false, false},
}

// mmhqShared is the dynamic shared memory of mmhq_<kind>_<t>: t.stages
// stages of t.batch rows of X (t.lds() 16-bit values each) and t.rows raw
// weight rows of the kind's stride, then the dequantized tile Wh, t.rows
// rows of t.lds() values.
func mmhqShared(kind string, t mmhTile) int {
	stage := t.batch*t.lds()*2 + t.rows*mmhqRawStride(kind)
	return t.stages*stage + t.rows*t.lds()*2
}

// mmhqTileFor is the tile a product of B activation rows over rows weight
// rows runs in on a device of sms multiprocessors: pickTile over
// mmhqTiles, as the 16-bit products pick.
func mmhqTileFor(B, rows, sms int) mmhTile { return pickTile(mmhqTiles, B, rows, sms) }
