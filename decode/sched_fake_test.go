package decode

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"unicode/utf8"
)

// fakeEngine is a deterministic stand-in for a model: the logits after a
// token depend only on the tokens of its sequence up to its position, so
// any correct batching gives the same logits. It checks that the KV cache
// is filled without gaps, as a real engine needs.
type fakeEngine struct {
	vocab, ctx, seqs int
	gate             chan struct{} // when non-nil, each Forward waits for a value

	mu      sync.Mutex // guards the fields below
	hist    [][]int32  // [seqs][ctx] token written at each position
	filled  []int      // [seqs] positions written so far (counting from the last restart at 0)
	batches []Batch    // copy of every batch seen
	fail    error      // returned by the next Forward, then cleared
}

func newFakeEngine(vocab, ctx, seqs int) *fakeEngine {
	e := &fakeEngine{vocab: vocab, ctx: ctx, seqs: seqs, filled: make([]int, seqs)}
	e.hist = make([][]int32, seqs)
	for i := range e.hist {
		e.hist[i] = make([]int32, ctx)
	}
	return e
}

func (e *fakeEngine) VocabSize() int   { return e.vocab }
func (e *fakeEngine) ContextSize() int { return e.ctx }
func (e *fakeEngine) MaxSeqs() int     { return e.seqs }
func (e *fakeEngine) Close() error     { return nil }

func (e *fakeEngine) Forward(b *Batch, out []float32) error {
	if e.gate != nil {
		<-e.gate
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.batches = append(e.batches, Batch{
		Tokens: append([]int32(nil), b.Tokens...), Pos: append([]int32(nil), b.Pos...),
		Seq: append([]int32(nil), b.Seq...), Logits: append([]bool(nil), b.Logits...),
	})
	if err := e.fail; err != nil {
		e.fail = nil
		return err
	}
	row := 0
	for i, tok := range b.Tokens {
		s, p := int(b.Seq[i]), int(b.Pos[i])
		if s < 0 || s >= e.seqs || p < 0 || p >= e.ctx || tok < 0 || int(tok) >= e.vocab {
			return fmt.Errorf("fake: token %d at seq %d pos %d out of range", tok, s, p)
		}
		if p > e.filled[s] {
			return fmt.Errorf("fake: seq %d pos %d written with only %d positions filled", s, p, e.filled[s])
		}
		e.hist[s][p] = tok
		e.filled[s] = p + 1
		if b.Logits[i] {
			fakeLogits(e.hist[s][:p+1], out[row*e.vocab:(row+1)*e.vocab])
			row++
		}
	}
	return nil
}

// fakeLogits fills out with pseudo-random logits seeded by the history.
func fakeLogits(hist []int32, out []float32) {
	h := uint64(14695981039346656037)
	for _, t := range hist {
		h = (h ^ uint64(t)) * 1099511628211
	}
	rng := rand.New(rand.NewPCG(h, uint64(len(hist))))
	for i := range out {
		out[i] = float32(rng.NormFloat64() * 2)
	}
	out[fakeEOS] -= 6 // end of generation is rare unless biased
}

const fakeEOS = 0

// fakeVocab maps token t > 0 to one byte of fakeAlphabet; fakeEOS ends generation.
type fakeVocab struct{}

const fakeAlphabet = "?abcdefghijklmnopqrstuvwxyz .,!\n"

func (fakeVocab) IsEOG(id int32) bool { return id == fakeEOS }
func (fakeVocab) NewTextDecoder() TextDecoder {
	return &fakeTextDecoder{}
}

// fakeTextDecoder releases complete UTF-8 only.
type fakeTextDecoder struct{ buf []byte }

func (d *fakeTextDecoder) Add(id int32) string {
	d.buf = append(d.buf, fakeAlphabet[id%int32(len(fakeAlphabet))])
	n := 0
	for n < len(d.buf) && utf8.FullRune(d.buf[n:]) {
		_, size := utf8.DecodeRune(d.buf[n:])
		n += size
	}
	s := string(d.buf[:n])
	d.buf = d.buf[n:]
	return s
}

func (d *fakeTextDecoder) Flush() string {
	s := string(d.buf)
	d.buf = nil
	return s
}
