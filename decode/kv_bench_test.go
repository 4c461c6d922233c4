package decode

import (
	"context"
	"fmt"
	"testing"
	"time"

	"llmserve/model"
	"llmserve/model/synth"
)

// synthLlama writes the "tiny" synthetic Llama shape (width 256, 4 layers,
// 8 heads over 4 KV heads of 32) in Q8_0 and loads it.
func synthLlama(b *testing.B) *model.Model {
	b.Helper()
	cfg, err := synth.Shape("llama", "tiny")
	if err != nil {
		b.Fatal(err)
	}
	return openSynth(b, cfg, "Q8_0", 5)
}

// BenchmarkKVDecodeDepth times one decode step at depth 1024 of the tiny
// synthetic Llama for each cache type and block size; a block of the whole
// context is the contiguous layout of a fixed slot.
func BenchmarkKVDecodeDepth(b *testing.B) {
	const depth, ctx = 1024, 2048
	m := synthLlama(b)
	prompt := make([]int32, depth)
	for i := range prompt {
		prompt[i] = int32(1 + i*31%200)
	}
	for _, typ := range []KVType{KVF32, KVF16, KVQ8_0} {
		for _, bs := range []int{16, 32, 64, ctx} {
			b.Run(fmt.Sprintf("%s/block%d", typ, bs), func(b *testing.B) {
				e, err := NewCPUEngine(m, CPUOptions{Context: ctx, MaxSeqs: 1, BlockSize: bs, CacheTypeK: typ, CacheTypeV: typ})
				if err != nil {
					b.Fatal(err)
				}
				defer e.Close()
				var pb Batch
				for i, t := range prompt {
					pb.Add(t, int32(i), 0, i == depth-1)
				}
				row := make([]float32, e.VocabSize())
				if err := e.Forward(&pb, row); err != nil {
					b.Fatal(err)
				}
				var db Batch
				db.Add(7, depth, 0, true)
				b.ResetTimer()
				for range b.N {
					if err := e.Forward(&db, row); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkKVPrefill times a 512-token prompt of the tiny synthetic Llama
// for each cache type, in blocks of 32 and in one block (the contiguous
// layout of a fixed slot).
func BenchmarkKVPrefill(b *testing.B) {
	const n = 512
	m := synthLlama(b)
	prompt := make([]int32, n)
	for i := range prompt {
		prompt[i] = int32(1 + i*31%200)
	}
	for _, typ := range []KVType{KVF32, KVF16, KVQ8_0} {
		for _, bs := range []int{32, n} {
			b.Run(fmt.Sprintf("%s/block%d", typ, bs), func(b *testing.B) {
				e, err := NewCPUEngine(m, CPUOptions{Context: n, MaxSeqs: 1, BlockSize: bs, CacheTypeK: typ, CacheTypeV: typ})
				if err != nil {
					b.Fatal(err)
				}
				defer e.Close()
				var pb Batch
				for i, t := range prompt {
					pb.Add(t, int32(i), 0, i == n-1)
				}
				row := make([]float32, e.VocabSize())
				for range b.N {
					if err := e.Forward(&pb, row); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tok/s")
			})
		}
	}
}

// BenchmarkSecondTurnTTFT times the first token of a chat's second turn
// (the first turn's 1000-token prompt, its 20-token reply and 50 new
// tokens) on the tiny synthetic Llama, with the first turn's blocks in the
// prefix cache and with cache_prompt false.
func BenchmarkSecondTurnTTFT(b *testing.B) {
	m := synthLlama(b)
	eng, err := NewCPUEngine(m, CPUOptions{Context: 2048, MaxSeqs: 2})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { eng.Close() })
	s, err := NewScheduler(eng, fakeVocab{}, SchedulerConfig{MaxQueue: 4})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	b.Cleanup(func() { cancel(); <-done })
	first := make([]int32, 1000)
	for i := range first {
		first[i] = int32(1 + i*31%200)
	}
	generate := func(r Request) ([]int32, time.Duration) {
		start := time.Now()
		st, err := s.Submit(context.Background(), r)
		if err != nil {
			b.Fatal(err)
		}
		var toks []int32
		var ttft time.Duration
		for {
			ev, err := st.Next(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			if ev.Done {
				if ev.Err != nil {
					b.Fatal(ev.Err)
				}
				return toks, ttft
			}
			if len(toks) == 0 {
				ttft = time.Since(start)
			}
			toks = append(toks, ev.Token)
		}
	}
	reply, firstTTFT := generate(Request{Prompt: first, MaxTokens: 20, IgnoreEOS: true})
	second := append(append(append([]int32(nil), first...), reply...), first[100:150]...)
	for _, tt := range []struct {
		name    string
		noCache bool
	}{{"reuse", false}, {"cold", true}} {
		b.Run(tt.name, func(b *testing.B) {
			var total time.Duration
			for range b.N {
				_, ttft := generate(Request{Prompt: second, MaxTokens: 1, IgnoreEOS: true, NoPromptCache: tt.noCache})
				total += ttft
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms-ttft")
			b.ReportMetric(float64(firstTTFT.Microseconds())/1000, "ms-first-turn")
		})
	}
}
