package httpapi

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"llmserve/decode"
)

// fakeEngine is a deterministic model: the logits after a token depend only
// on its sequence's tokens up to its position, so results do not depend on
// batching. gate, when set, holds every Forward until it receives a value;
// delay, when set, makes every Forward take at least that long.
type fakeEngine struct {
	vocab, ctx, seqs int
	gate             chan struct{}
	delay            time.Duration

	mu        sync.Mutex // guards hist, failAfter, maxRows
	hist      [][]int32  // [seqs][ctx] token at each position
	failAfter int        // when > 0, counts down Forward calls; the one reaching 0 fails
	maxRows   int        // most logits rows in one Forward
}

func newFakeEngine(ctx, seqs int) *fakeEngine {
	e := &fakeEngine{vocab: len(fakeAlphabet), ctx: ctx, seqs: seqs, hist: make([][]int32, seqs)}
	for i := range e.hist {
		e.hist[i] = make([]int32, ctx)
	}
	return e
}

func (e *fakeEngine) VocabSize() int   { return e.vocab }
func (e *fakeEngine) ContextSize() int { return e.ctx }
func (e *fakeEngine) MaxSeqs() int     { return e.seqs }
func (e *fakeEngine) Close() error     { return nil }

func (e *fakeEngine) Forward(b *decode.Batch, out []float32) error {
	if e.gate != nil {
		<-e.gate
	}
	if e.delay > 0 {
		time.Sleep(e.delay)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.failAfter > 0 {
		e.failAfter--
		if e.failAfter == 0 {
			return fmt.Errorf("fake engine failure")
		}
	}
	row := 0
	for i, tok := range b.Tokens {
		s, p := b.Seq[i], b.Pos[i]
		e.hist[s][p] = tok
		if b.Logits[i] {
			h := uint64(14695981039346656037)
			for _, t := range e.hist[s][:p+1] {
				h = (h ^ uint64(t)) * 1099511628211
			}
			rng := rand.New(rand.NewPCG(h, uint64(p)))
			o := out[row*e.vocab : (row+1)*e.vocab]
			for v := range o {
				o[v] = float32(rng.NormFloat64() * 2)
			}
			o[fakeEOS] -= 8
			o[fakeBOS] -= 100
			row++
		}
	}
	e.maxRows = max(e.maxRows, row)
	return nil
}

// The fake vocabulary: EOS, BOS, then one character per token.
const (
	fakeEOS      = 0
	fakeBOS      = 1
	fakeAlphabet = "\x00\x01?abcdefghijklmnopqrstuvwxyz .,!\n<|>_"
)

// fakeTokenizer encodes one character per token; unknown characters become '?'.
type fakeTokenizer struct{}

func (fakeTokenizer) Encode(text string, addSpecial, parseSpecial bool) ([]int32, error) {
	var ids []int32
	if addSpecial {
		ids = append(ids, fakeBOS)
	}
	for _, r := range text {
		i := strings.IndexRune(fakeAlphabet[2:], r)
		if i < 0 {
			i = 0
		}
		ids = append(ids, int32(i+2))
	}
	return ids, nil
}

func (f fakeTokenizer) Decode(ids []int32) string {
	var sb strings.Builder
	for _, id := range ids {
		sb.Write(f.TokenBytes(id))
	}
	return sb.String()
}

func (fakeTokenizer) TokenBytes(id int32) []byte {
	if id < 2 || int(id) >= len(fakeAlphabet) {
		return nil
	}
	return []byte{fakeAlphabet[id]}
}

func (fakeTokenizer) TokenText(id int32) string {
	switch id {
	case fakeEOS:
		return "</s>"
	case fakeBOS:
		return "<s>"
	}
	return string(fakeAlphabet[id])
}

func (fakeTokenizer) BOS() int32     { return fakeBOS }
func (fakeTokenizer) EOS() int32     { return fakeEOS }
func (fakeTokenizer) VocabSize() int { return len(fakeAlphabet) }

// fakeVocab is the scheduler's view of fakeTokenizer.
type fakeVocab struct{}

func (fakeVocab) IsEOG(id int32) bool                { return id == fakeEOS }
func (fakeVocab) NewTextDecoder() decode.TextDecoder { return &fakeTextDecoder{} }

type fakeTextDecoder struct{}

func (fakeTextDecoder) Add(id int32) string { return string(fakeTokenizer{}.TokenBytes(id)) }
func (fakeTextDecoder) Flush() string       { return "" }
