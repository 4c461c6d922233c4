package synth

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
)

// weightStd is the standard deviation of random matrices, biases and the
// noise on norm weights.
const weightStd = 0.02

// tensorKey derives a tensor's generator key from the model seed and the
// tensor's name, so that no tensor's values depend on another's.
func tensorKey(seed uint64, name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return mix64(seed ^ mix64(h.Sum64()))
}

// mix64 is the splitmix64 finalizer: it spreads every input bit over the
// output.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// rowFiller fills rows of one tensor. It holds the generator it reseeds for
// every row, so one rowFiller per goroutine serves any number of rows.
type rowFiller struct {
	pcg *rand.PCG  // reseeded per row
	rng *rand.Rand // draws from pcg
}

func newRowFiller() *rowFiller {
	pcg := rand.NewPCG(0, 0)
	return &rowFiller{pcg: pcg, rng: rand.New(pcg)}
}

// fill writes rows row0, row0+1, ... of tensor t (whose generator key is
// key) into dst, whose length is a whole number of rows.
func (f *rowFiller) fill(t *tensorSpec, c *Config, key uint64, row0 int64, dst []float32) {
	switch t.init {
	case initRopeFreqs:
		copy(dst, ropeFreqs(c.RopeScaling, c.HeadDim, c.RopeBase))
		return
	case initRopeShort, initRopeLong:
		// Short factors are 1; long ones rise from 1 to the scaling
		// factor, as Phi-3.5's do from high to low frequencies.
		for i := range dst {
			dst[i] = 1
			if t.init == initRopeLong && len(dst) > 1 {
				dst[i] = float32(1 + (c.LongRope.Factor-1)*float64(i)/float64(len(dst)-1))
			}
		}
		return
	}
	n := int(t.rowLen())
	for r := 0; r*n < len(dst); r++ {
		f.pcg.Seed(key, uint64(row0)+uint64(r))
		row := dst[r*n : (r+1)*n]
		base := float32(0)
		if t.init == initNorm {
			base = 1
		}
		for i := range row {
			row[i] = base + float32(f.rng.NormFloat64()*weightStd)
		}
	}
}

// ropeFreqs returns llama3's rope divisors for head width headDim: 1 for
// high frequencies, the scaling factor for low ones, and a smooth blend
// between (as llama.cpp's converter computes them for rope_freqs.weight).
func ropeFreqs(s *Llama3RopeScaling, headDim int, base float32) []float32 {
	lowWavelen := float64(s.OriginalContext) / s.LowFreqFactor
	highWavelen := float64(s.OriginalContext) / s.HighFreqFactor
	out := make([]float32, headDim/2)
	for i := range out {
		freq := 1 / math.Pow(float64(base), float64(2*i)/float64(headDim))
		wavelen := 2 * math.Pi / freq
		switch {
		case wavelen < highWavelen:
			out[i] = 1
		case wavelen > lowWavelen:
			out[i] = float32(s.Factor)
		default:
			smooth := (float64(s.OriginalContext)/wavelen - s.LowFreqFactor) / (s.HighFreqFactor - s.LowFreqFactor)
			out[i] = float32(1 / ((1-smooth)/s.Factor + smooth))
		}
	}
	return out
}
