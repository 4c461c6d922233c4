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
		{32, 4096, 512, 256, 16, 1, 32}, // 8B attention prompt in 64×128 tiles: two parts past B=64 stay one
		{32, 4096, 64, 256, 16, 2, 16},  // the same grid at B=64 splits in two
		{32, 1024, 512, 64, 8, 8, 4},    // 8B K/V projection in a prompt: 8 parts
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
				if parts == 2 && c.B > mmqWideBatch {
					t.Errorf("B=%d split in two parts", c.B)
				}
			}
		})
	}
}

// TestMmqModelPipeline runs a model of mmq's k loop (mmq.cu) for every
// part of the splits mmqSplitParts gives over 1 to 120 stages: part z
// loads stage s0 = z·per into buffer 0 and commits it, then at stage s
// loads s+1 into buffer (s+1−s0)&1, commits, waits until at most one group
// is pending (none at the last stage), computes on buffer (s−s0)&1 and
// meets the barrier that ends the stage. It checks that the parts compute
// every stage once, in order, each from the buffer its copy went to, after
// that copy's group has completed, and that no copy goes to a buffer whose
// stage has not been computed yet; and that every part starts on an even
// stage (a 256-value super-block: the parity the K-quant layouts read).
func TestMmqModelPipeline(t *testing.T) {
	for stages := 1; stages <= 120; stages++ {
		for want := 1; want <= 20; want++ {
			parts, per := mmqSplitParts(stages, 64, 16, want)
			split := per
			if parts == 1 {
				split = 0 // unsplit: split_stages 0, one part of every stage
			}
			computed := make([]int, stages)
			for z := 0; z < parts; z++ {
				p := split
				if p == 0 {
					p = stages
				}
				s0, s1 := z*p, min(stages, z*p+p)
				if s0%2 != 0 {
					t.Fatalf("%d stages in %d parts of %d: part %d starts on odd stage %d", stages, parts, per, z, s0)
				}
				var buf [2]int         // the stage each buffer holds, -1 when free
				var group []int        // the stage of each committed group, oldest first
				done := map[int]bool{} // stages whose copy has landed
				buf[0], buf[1] = -1, -1
				load := func(s int) {
					b := (s - s0) & 1
					if buf[b] != -1 {
						t.Fatalf("stage %d copied into buffer %d before stage %d there was computed", s, b, buf[b])
					}
					buf[b] = s
					group = append(group, s)
				}
				wait := func(pending int) {
					for len(group) > pending {
						done[group[0]] = true
						group = group[1:]
					}
				}
				if s0 < s1 {
					load(s0)
				}
				for s := s0; s < s1; s++ {
					if s+1 < s1 {
						load(s + 1)
						wait(1)
					} else {
						wait(0)
					}
					b := (s - s0) & 1
					if buf[b] != s || !done[s] {
						t.Fatalf("part %d computes stage %d from buffer %d holding %d (landed %v)", z, s, b, buf[b], done[s])
					}
					computed[s]++
					buf[b] = -1 // the barrier after the stage frees its buffer
				}
			}
			for s, n := range computed {
				if n != 1 {
					t.Fatalf("%d stages in %d parts of %d: stage %d computed %d times", stages, parts, per, s, n)
				}
			}
		}
	}
}
