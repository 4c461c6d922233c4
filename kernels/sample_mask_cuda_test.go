//go:build cuda

package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"llmserve/internal/cuda"
)

// TestSampleMasked checks SampleMasked against refPick of the masked rows
// over random logits (NaN, infinities and ties among them) and random
// masks — all allowed, one, none, half, sparse, and rows without a flag —
// in every mode: the picks, -1 where nothing allowed is finite, the logits
// changed in place as documented, unflagged rows untouched and picked as
// Sample picks them, and the picks in the step's inputs unchanged. Rows of
// 1001 logits are not 16-byte aligned and take the one-logit path.
func TestSampleMasked(t *testing.T) {
	params := []Pick{
		{Mode: PickGreedy},
		{Mode: PickRandom, Temperature: 0.8},
		{Mode: PickRandom, Temperature: 1, TopK: 40},
		{Mode: PickRandom, Temperature: 0.7, TopK: 40, TopP: 0.9, MinP: 0.05},
		{Mode: PickRandom, Temperature: 1.3, TopP: 0.95},
		{Mode: PickRandom, Temperature: 1, MinP: 0.1},
		{Mode: PickRandom, Temperature: 1, TopK: 1},
	}
	inf := float32(math.Inf(1))
	for _, n := range []int{1001, 32000, 128256} {
		for pi, p := range params {
			t.Run(fmt.Sprintf("n%d/params%d", n, pi), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(n), uint64(pi)+100))
				g := newBuffers(t)
				const rows = 64
				words := (n + 63) / 64
				kinds := make([]string, rows)
				for r := range kinds {
					kinds[r] = maskKinds[r%len(maskKinds)]
				}
				// NaN and infinities in the masked rows only: what the
				// unmasked kernel makes of them is sample.cu's business.
				x := make([]float32, rows*n)
				for i := range x {
					special := rng.IntN(500)
					if kinds[i/n] == "unflagged" {
						special = -1
					}
					switch special {
					case 0:
						x[i] = float32(math.NaN())
					case 1:
						x[i] = inf
					case 2:
						x[i] = -inf
					default:
						x[i] = float32(rng.NormFloat64() * 3)
						if i/n%4 == 3 {
							x[i] = float32(math.Round(float64(x[i]))) // many ties
						}
					}
				}
				picks := make([]Pick, rows)
				pw := make([]uint32, rows*PickWords)
				flags := make([]int32, rows)
				masks := make([]uint64, rows*words)
				for r := range rows {
					picks[r] = p
					picks[r].U = rng.Float32()
					picks[r].Encode(pw[r*PickWords:])
					copy(masks[r*words:], randMask(rng, kinds[r], n, words))
					if kinds[r] != "unflagged" {
						flags[r] = 1
					}
				}
				pb, err := cuda.Upload(dev.Context(), "test picks", pw)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { pb.Free() })
				mb, err := cuda.Upload(dev.Context(), "test masks", words32(masks))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { mb.Free() })
				scratch := g.i32(make([]int32, rows*PickWords))
				logits := g.f32(x, rows, n)
				out := g.i32(slices.Repeat([]int32{-7}, rows))
				m := SampleMasks{Flags: g.i32(flags), Masks: mb.Ptr(), Words: words, Picks: scratch.Ptr}
				if err := dev.SampleMasked(logits, pb.Ptr(), m, out); err != nil {
					t.Fatal(err)
				}
				got, after := readI32(t, out), read(t, logits)
				pwAfter := make([]uint32, len(pw))
				if err := readPtr(pb.Ptr(), cuda.AsBytes(pwAfter)); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(pw, pwAfter) {
					t.Error("SampleMasked changed the step's picks")
				}
				skipped, none := 0, 0
				for r := range rows {
					row := x[r*n : (r+1)*n]
					want := row
					alive := true
					if flags[r] != 0 {
						want, alive = maskedRow(row, masks[r*words:(r+1)*words])
					}
					for i := range want {
						if math.Float32bits(after[r*n+i]) != math.Float32bits(want[i]) {
							t.Fatalf("row %d (%s) logit %d: %g after the mask, want %g (was %g)", r, kinds[r], i, after[r*n+i], want[i], row[i])
						}
					}
					if !alive {
						none++
						if got[r] != -1 {
							t.Errorf("row %d (%s): picked %d with no allowed finite logit, want -1", r, kinds[r], got[r])
						}
						continue
					}
					ref, margin := refPick(want, picks[r])
					if margin < 1e-5 {
						skipped++
						continue
					}
					if got[r] != ref {
						t.Errorf("row %d (%s, u %.6f): picked %d, want %d", r, kinds[r], picks[r].U, got[r], ref)
					}
					if flags[r] != 0 && ref >= 0 && masks[r*words+int(ref)/64]>>(ref%64)&1 == 0 {
						t.Errorf("row %d (%s): the reference picked banned token %d", r, kinds[r], ref)
					}
				}
				t.Logf("%d of %d rows compared, %d with nothing allowed", rows-skipped, rows, none)
				if none == 0 {
					t.Error("no row with nothing allowed")
				}
				if skipped > rows/2 {
					t.Errorf("%d of %d rows too close to a boundary to compare", skipped, rows)
				}
			})
		}
	}
}

// TestSampleMaskedRefuses checks SampleMasked's argument checks: masks too
// short for the row, misaligned, or too few flags.
func TestSampleMaskedRefuses(t *testing.T) {
	g := newBuffers(t)
	const n = 200
	logits := g.f32(make([]float32, 2*n), 2, n)
	out := g.i32(make([]int32, 2))
	flags := g.i32(make([]int32, 2))
	buf := g.i32(make([]int32, 64))
	for _, m := range []SampleMasks{
		{Flags: flags, Masks: buf.Ptr, Words: 3, Picks: buf.Ptr},
		{Flags: flags, Masks: buf.Ptr + 4, Words: 4, Picks: buf.Ptr},
		{Flags: DevI32{Ptr: flags.Ptr, Len: 1}, Masks: buf.Ptr, Words: 4, Picks: buf.Ptr},
		{Flags: flags, Masks: buf.Ptr, Words: 4},
	} {
		if err := dev.SampleMasked(logits, buf.Ptr, m, out); err == nil {
			t.Errorf("%+v: no error", m)
		}
	}
}
