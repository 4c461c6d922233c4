//go:build cuda

package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"llmserve/gguf"
)

// TestGPUMatMulHalfGLU checks the GLU launch of the 16-bit products
// (matMulHalfGLU): in every tile, at batches 1, 9 and 130 over rows that
// are not tile multiples, h is silu(gate)·up as the swiglu kernel computes
// it from gate and up launched as segments in the same tile, rounded to
// the weights' type (the same bits); a down product from h (Rounded) gives
// the bits of the one that rounds that SwiGLU input itself; and mismatched
// gate and up matrices are refused.
func TestGPUMatMulHalfGLU(t *testing.T) {
	const maxB, rows, cols, downRows = 130, 200, 264, 72
	if !mmhTileFor(512, 2*14336, 132).gluOK() {
		t.Errorf("the tile of Llama-3.1-8B's gate/up at 512 tokens, %v, takes no GLU launch", mmhTileFor(512, 2*14336, 132))
	}
	for _, typ := range []gguf.Type{gguf.TypeF16, gguf.TypeBF16} {
		t.Run(typ.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(17, uint64(typ)))
			g := newBuffers(t)
			x := g.f32(randF32(rng, maxB*cols), maxB, cols)
			gw := g.matrix(typ, randomRows(rng, typ, rows, cols), rows, cols, false)
			uw := g.matrix(typ, randomRows(rng, typ, rows, cols), rows, cols, false)
			dw := g.matrix(typ, randomRows(rng, typ, downRows, rows), downRows, rows, false)
			sb := MatMulHalfScratchBytes(maxB, max(cols, rows))
			scratch := g.poisoned(1, int(sb/4))
			h := g.poisoned(maxB, rows/2) // B × rows 16-bit values
			tested := 0
			for _, tile := range mmhTiles {
				if !dev.mmhTileRuns(tile) || !tile.gluOK() {
					continue
				}
				tested++
				for _, B := range []int{1, 9, maxB} {
					gy, uy, swi := g.poisoned(B, rows), g.poisoned(B, rows), g.poisoned(B, rows)
					gate := MatMulOp{W: gw, X: x.Slice(0, B), Y: gy, Scratch: scratch.Ptr, ScratchBytes: sb}
					up := gate
					up.W, up.Y = uw, uy
					if err := dev.matMulHalfGLUIn(gate, up, h.Ptr, tile); err != nil {
						t.Fatalf("%v: %v", tile, err)
					}
					got := read(t, h.Slice(0, B))
					if err := dev.matMulHalfIn([]MatMulOp{gate, up}, tile); err != nil {
						t.Fatalf("%v: %v", tile, err)
					}
					if err := dev.SwiGLU(gy, uy, swi); err != nil {
						t.Fatal(err)
					}
					want := mmhRound(typ, read(t, swi))
					for j, w := range want {
						bits := uint16(math.Float32bits(got[j/2]) >> (16 * (j % 2)))
						var wb uint16
						if typ == gguf.TypeBF16 {
							wb = gguf.FP32ToBF16(w)
						} else {
							wb = gguf.FP32ToFP16(w)
						}
						if math.IsNaN(float64(w)) || bits != wb {
							t.Fatalf("%v, B %d: h[%d][%d] = %#04x, want %#04x (%g)", tile, B, j/rows, j%rows, bits, wb, w)
						}
					}
					// The down product from h as rounded, beside the one
					// rounding the f32 SwiGLU input.
					fromH, fromX := g.poisoned(B, downRows), g.poisoned(B, downRows)
					rounded := MatMulOp{W: dw, X: DevF32{Rows: B, Cols: rows}, Y: fromH, Scratch: h.Ptr, ScratchBytes: MatMulHalfScratchBytes(B, rows), Rounded: true}
					if err := dev.matMulHalfIn([]MatMulOp{rounded}, tile); err != nil {
						t.Fatalf("%v: %v", tile, err)
					}
					plain := MatMulOp{W: dw, X: swi, Y: fromX, Scratch: scratch.Ptr, ScratchBytes: sb}
					if err := dev.matMulHalfIn([]MatMulOp{plain}, tile); err != nil {
						t.Fatalf("%v: %v", tile, err)
					}
					a, b := read(t, fromH), read(t, fromX)
					for j := range b {
						if math.IsNaN(float64(b[j])) || math.Float32bits(a[j]) != math.Float32bits(b[j]) {
							t.Fatalf("%v, B %d: down[%d][%d] = %g from h, %g from the f32 input", tile, B, j/downRows, j%downRows, a[j], b[j])
						}
					}
				}
			}
			if tested == 0 {
				t.Fatal("no tile takes a GLU launch on this device")
			}
			gate := MatMulOp{W: gw, X: x.Slice(0, 9), Y: g.poisoned(9, rows), Scratch: scratch.Ptr, ScratchBytes: sb}
			other := gate
			other.W, other.Y = dw, g.poisoned(9, downRows)
			if err := dev.matMulHalfGLU(gate, other, h.Ptr); err == nil {
				t.Error("a gate of 200 rows with an up of 72: no error")
			}
		})
	}
}

// TestGPUWGMMALoaded checks that the wgmma products (mmw.ptx, compiled by
// the driver for sm_90a) load on a device of compute capability 9.0, and
// are refused with a reason on any other.
func TestGPUWGMMALoaded(t *testing.T) {
	major, minor := dev.Context().Capability()
	err := dev.WGMMA()
	switch {
	case major == 9 && minor == 0 && err != nil:
		t.Fatalf("compute capability 9.0: %v", err)
	case (major != 9 || minor != 0) && err == nil:
		t.Errorf("compute capability %d.%d: the wgmma products loaded", major, minor)
	}
	t.Logf("compute capability %d.%d, wgmma products: %v", major, minor, err)
}
