package kernels

import (
	"fmt"
	"testing"
)

// TestMmqSplit checks the k splits of the tensor-core products: every
// part holds at least one stage and the parts cover the k range once,
// parts start on super-blocks, the partial sums fit their scratch, a grid
// that fills the device is never split, and the decode shapes get the
// splits worked out by hand.
func TestMmqSplit(t *testing.T) {
	const sms = 132
	cases := []struct {
		stages, rows, B, blocks, warps int
		parts, per                     int // 0: only the properties are checked
	}{
		{16, 2048, 16, 32, 2, 4, 4},     // 1B attention, B=16 in 64×16 tiles: 4 parts of 512 values
		{64, 2048, 16, 32, 2, 16, 4},    // 1B FFN down (8192 values)
		{32, 4096, 64, 64, 4, 8, 4},     // 8B attention at B=64 in 64×64 tiles
		{112, 4096, 64, 64, 4, 14, 8},   // 8B FFN down at B=64: the scratch allows 16 parts, the target 17: 14 of 8
		{16, 2048, 512, 256, 8, 3, 6},   // a prompt: 2048 warps of the 4224 of two waves
		{32, 14336, 512, 896, 8, 1, 32}, // 8B FFN up prompt: fills the device
		{3, 100, 9, 2, 4, 1, 3},         // too few stages to split
		{64, 8192, 513, 128, 4, 0, 0},   // the scratch bounds it
		{2, 64, 1, 1, 2, 1, 2},
		{5, 64, 1, 1, 2, 0, 0},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%d-stages/%dx%d/%d-blocks", c.stages, c.rows, c.B, c.blocks), func(t *testing.T) {
			parts, per := mmqSplit(c.stages, c.rows, c.B, c.blocks, c.warps, sms)
			if c.parts != 0 && (parts != c.parts || per != c.per) {
				t.Errorf("%d parts of %d stages, want %d of %d", parts, per, c.parts, c.per)
			}
			if parts < 1 || per < 1 || (parts-1)*per >= c.stages || parts*per < c.stages {
				t.Fatalf("%d parts of %d stages do not cover %d stages once, each part non-empty", parts, per, c.stages)
			}
			if parts > 1 {
				if per%2 != 0 || per < mmqMinPartStages {
					t.Errorf("parts of %d stages: want an even count of at least %d", per, mmqMinPartStages)
				}
				if bytes := 4 * parts * c.B * c.rows; bytes > mmqSplitBytes {
					t.Errorf("partial sums of %d bytes, more than the %d of the scratch", bytes, mmqSplitBytes)
				}
				if c.blocks*c.warps >= mmqWarpsPerSM*sms {
					t.Errorf("a grid of %d warps split", c.blocks*c.warps)
				}
			}
		})
	}
}
