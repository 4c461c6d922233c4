package httpapi

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"llmserve/decode"
	"llmserve/gguf"
	"llmserve/internal/shared"
	"llmserve/model"
	"llmserve/model/chat"
	"llmserve/model/tokenizer"
)

// benchStreams and benchTokens size the throughput comparison: this many
// sequences decoded together, each generating this many tokens.
const (
	benchStreams = 8
	benchTokens  = 128
)

type tokVocab struct{ t *tokenizer.Tokenizer }

func (v tokVocab) IsEOG(id int32) bool                { return v.t.IsEOG(id) }
func (v tokVocab) NewTextDecoder() decode.TextDecoder { return v.t.NewStreamDecoder() }

func loadStories(b *testing.B) (*decode.CPUEngine, *tokenizer.Tokenizer) {
	b.Helper()
	f, err := gguf.Open(shared.Path(b, "models/stories260K.gguf"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	m, err := model.Load(f)
	if err != nil {
		b.Fatal(err)
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		b.Fatal(err)
	}
	eng, err := decode.NewCPUEngine(m, decode.CPUOptions{Context: benchTokens + 8, MaxSeqs: benchStreams})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { eng.Close() })
	return eng, tok
}

// BenchmarkThroughput compares generated tokens per second for the same
// batch (benchStreams greedy sequences of benchTokens tokens from BOS on
// stories260K) at three levels: the engine's own decode loop, the
// scheduler, and streamed over HTTP as server-sent events.
func BenchmarkThroughput(b *testing.B) {
	eng, tok := loadStories(b)
	total := float64(benchStreams * benchTokens)

	b.Run("engine", func(b *testing.B) {
		vocab := eng.VocabSize()
		logits := make([]float32, benchStreams*vocab)
		var batch decode.Batch
		next := make([]int32, benchStreams)
		start := time.Now()
		for b.Loop() {
			for s := range next {
				next[s] = tok.BOS()
			}
			for pos := range benchTokens {
				batch.Reset()
				for s, t := range next {
					batch.Add(t, int32(pos), int32(s), true)
				}
				if err := eng.Forward(&batch, logits); err != nil {
					b.Fatal(err)
				}
				for s := range next {
					row := logits[s*vocab : (s+1)*vocab]
					best := 0
					for i, l := range row {
						if l > row[best] {
							best = i
						}
					}
					next[s] = int32(best)
				}
			}
		}
		b.ReportMetric(total*float64(b.N)/time.Since(start).Seconds(), "tok/s")
	})

	sched, err := decode.NewScheduler(eng, tokVocab{tok}, decode.SchedulerConfig{MaxQueue: benchStreams})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go sched.Run(ctx)
	req := decode.Request{Prompt: []int32{tok.BOS()}, MaxTokens: benchTokens, IgnoreEOS: true}

	b.Run("scheduler", func(b *testing.B) {
		start := time.Now()
		for b.Loop() {
			var wg sync.WaitGroup
			for range benchStreams {
				st, err := sched.Submit(ctx, req)
				if err != nil {
					b.Fatal(err)
				}
				wg.Go(func() {
					for {
						ev, err := st.Next(ctx)
						if err != nil || ev.Done {
							return
						}
					}
				})
			}
			wg.Wait()
		}
		b.ReportMetric(total*float64(b.N)/time.Since(start).Seconds(), "tok/s")
	})

	b.Run("http-sse", func(b *testing.B) {
		tmpl, err := chat.Fallback("chatml")
		if err != nil {
			b.Fatal(err)
		}
		api := New(Config{ModelName: "stories", Logger: zerolog.Nop()})
		api.SetModel(&Model{Name: "stories", Scheduler: sched, Tokenizer: tok, Chat: tmpl, Created: time.Now()})
		srv := httptest.NewServer(api.Handler())
		defer srv.Close()
		body := fmt.Sprintf(`{"prompt":[%d],"max_tokens":%d,"temperature":0,"ignore_eos":true,"stream":true}`, tok.BOS(), benchTokens)
		start := time.Now()
		for b.Loop() {
			var wg sync.WaitGroup
			for range benchStreams {
				wg.Go(func() {
					resp, err := http.Post(srv.URL+"/v1/completions", "application/json", strings.NewReader(body))
					if err != nil {
						b.Error(err)
						return
					}
					defer resp.Body.Close()
					data, _ := io.ReadAll(resp.Body)
					if !strings.HasSuffix(string(data), "data: [DONE]\n\n") {
						b.Errorf("stream did not end with [DONE]")
					}
				})
			}
			wg.Wait()
		}
		b.ReportMetric(total*float64(b.N)/time.Since(start).Seconds(), "tok/s")
	})
}
