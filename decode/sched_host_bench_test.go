package decode

import (
	"context"
	"sync"
	"testing"
	"time"
)

// nullPicker is a Picker that computes nothing: every offered row gets
// the token after the one it was fed (greedy on a device, in effect),
// rows not offered get zero logits. It isolates the scheduler's own host
// work per step, which a device step waits for.
type nullPicker struct {
	vocab, ctx, seqs int
	steps            int
}

func (e *nullPicker) VocabSize() int   { return e.vocab }
func (e *nullPicker) ContextSize() int { return e.ctx }
func (e *nullPicker) MaxSeqs() int     { return e.seqs }
func (e *nullPicker) Close() error     { return nil }

func (e *nullPicker) Forward(b *Batch, out []float32) error {
	e.steps++
	clear(out[:b.wanted()*e.vocab])
	return nil
}

func (e *nullPicker) ForwardPick(b *Batch, picks []*Pick, toks []int32, logits []float32) error {
	e.steps++
	r := 0
	for i, want := range b.Logits {
		if !want {
			continue
		}
		if picks[r] == nil {
			toks[r] = -1
			clear(logits[r*e.vocab : (r+1)*e.vocab])
		} else {
			toks[r] = (b.Tokens[i] + 1) % int32(e.vocab)
		}
		r++
	}
	return nil
}

// BenchmarkSchedulerHost runs 64 greedy requests of 256 tokens (prompts of
// 110) through the scheduler over nullPicker with a vocabulary of 128256
// (Llama 3's): the host's cost of a step of 64 running streams, which a
// device's step adds to its own (reported as µs/step).
func BenchmarkSchedulerHost(b *testing.B) {
	const seqs, promptLen, gen = 64, 110, 256
	for b.Loop() {
		eng := &nullPicker{vocab: 128256, ctx: 512, seqs: seqs}
		s, err := NewScheduler(eng, fakeVocab{}, SchedulerConfig{StepTokens: 512})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var mu sync.Mutex
		tokens := 0
		for c := range seqs {
			st, err := s.Submit(ctx, Request{Prompt: prompt(promptLen, int32(c)), MaxTokens: gen, IgnoreEOS: true})
			if err != nil {
				b.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					ev, err := st.Next(ctx)
					if err != nil || ev.Done {
						return
					}
					mu.Lock()
					tokens++
					mu.Unlock()
				}
			}()
		}
		// Every request waits before the loop starts, so that the steps
		// carry all 64 as they would behind a device's longer steps.
		done := make(chan struct{})
		start := time.Now()
		go func() { defer close(done); _ = s.Run(ctx) }()
		wg.Wait()
		el := time.Since(start)
		cancel()
		<-done
		if tokens != seqs*gen {
			b.Fatalf("%d tokens streamed, want %d", tokens, seqs*gen)
		}
		b.ReportMetric(float64(el.Microseconds())/float64(eng.steps), "µs/step")
		b.ReportMetric(float64(eng.steps), "steps")
	}
}
