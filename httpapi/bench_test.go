package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"llmserve/decode"
	"llmserve/gguf"
	"llmserve/internal/shared"
	"llmserve/model"
	"llmserve/model/chat"
	"llmserve/model/synth"
	"llmserve/model/tokenizer"
)

// benchTokens is how many tokens each stream of BenchmarkThroughput
// generates, from a prompt of one BOS token.
const benchTokens = 128

// BenchmarkThroughput compares generated tokens per second for the same
// batch — streams sequences of benchTokens greedy tokens each, all started
// together — driven three ways over one engine:
//
//   - engine: a plain loop of Forward steps and decode.Sampler calls, the
//     engine's own speed;
//   - sched: requests submitted to the scheduler and read from their
//     streams, as in-process callers see it;
//   - http: streamed completions over HTTP (server-sent events) to real
//     clients on TCP connections, each reading its stream line by line.
//
// Each iteration runs all three twice, in mirrored order, so that the
// load of other work on the machine falls on them alike; the metrics are
// each path's tokens per second over all iterations, the ratios
// sched/engine and http/engine, and how many forward steps per batch the
// scheduler needed beyond the engine loop's benchTokens (requests that
// joined a step late). The scheduler's first step of a batch waits until
// all of its requests have arrived, so that the batch starts together as
// in the engine loop rather than with whichever request came first; the
// time the requests take to arrive still counts. The models are stories260K (a
// 260K-parameter model whose steps take about a millisecond, where fixed
// per-token costs show most) and a synthetic Llama of 4 layers with
// Llama 3's 128k vocabulary in Q8_0 (the output layer makes steps of
// realistic millisecond scale), written to the temporary folder on first
// use.
// envBenchModel is the model named by LLMSERVE_BENCH_MODEL, or a skip.
func envBenchModel(b *testing.B) string {
	p := os.Getenv("LLMSERVE_BENCH_MODEL")
	if p == "" {
		b.Skip("LLMSERVE_BENCH_MODEL not set: skipping the case of a real-sized model")
	}
	return p
}

func BenchmarkThroughput(b *testing.B) {
	models := []struct {
		name string
		path func(b *testing.B) string
	}{
		{"stories260K", func(b *testing.B) string { return shared.Path(b, "models/stories260K.gguf") }},
		{"tiny-bpe-Q8_0", tinyBPEModel},
		// LLMSERVE_BENCH_MODEL adds a model of real size (e.g. one made by
		// `llmserve synth --shape 1b`), whose steps take what a user's do.
		{"env", envBenchModel},
	}
	for _, m := range models {
		for _, streams := range []int{8, 32} {
			b.Run(fmt.Sprintf("model=%s/streams=%d", m.name, streams), func(b *testing.B) {
				r := newBenchRig(b, m.path(b), streams)
				paths := []struct {
					name string
					run  func() error
				}{{"engine", r.engineLoop}, {"sched", r.viaScheduler}, {"http", r.viaHTTP}}
				r.tokens = 4 // warm up: connections, caches, buffers, mapped weights
				for _, p := range paths {
					if err := p.run(); err != nil {
						b.Fatalf("%s: %v", p.name, err)
					}
				}
				r.tokens = benchTokens
				// Each iteration runs every path twice, in the order
				// engine, sched, http, http, sched, engine, so that a
				// drift in the machine's load falls on all of them alike.
				order := []int{0, 1, 2, 2, 1, 0}
				spent := make([]time.Duration, len(paths))
				steps := make([]int64, len(paths))
				iter := 0
				for b.Loop() {
					for _, i := range order {
						s0 := r.steps.steps.Load()
						start := time.Now()
						if err := paths[i].run(); err != nil {
							b.Fatalf("%s: %v", paths[i].name, err)
						}
						spent[i] += time.Since(start)
						steps[i] += r.steps.steps.Load() - s0
					}
					iter++
				}
				runs := 2 * iter // of each path
				tokens := float64(runs * streams * benchTokens)
				rate := make([]float64, len(paths))
				for i, p := range paths {
					rate[i] = tokens / spent[i].Seconds()
					b.ReportMetric(rate[i], p.name+"-tok/s")
				}
				b.ReportMetric(rate[1]/rate[0], "sched/engine")
				b.ReportMetric(rate[2]/rate[0], "http/engine")
				// Forward steps per batch beyond the engine loop's benchTokens:
				// requests that join or end a few steps apart.
				b.ReportMetric(float64(steps[1])/float64(runs)-benchTokens, "sched-extra-steps")
				b.ReportMetric(float64(steps[2])/float64(runs)-benchTokens, "http-extra-steps")
			})
		}
	}
}

// tinyBPEModel returns the path of the synthetic Llama with a 128k
// vocabulary, writing it to the temporary folder when it is not there.
func tinyBPEModel(b *testing.B) string {
	b.Helper()
	path := filepath.Join(os.TempDir(), "tiny-bpe.gguf")
	if _, err := os.Stat(path); err == nil {
		return path
	}
	v, err := gguf.Open(shared.Path(b, "vocab/ggml-vocab-llama-bpe.gguf"))
	if err != nil {
		b.Fatal(err)
	}
	defer v.Close()
	cfg, err := synth.Shape("llama", "tiny")
	if err != nil {
		b.Fatal(err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "tiny-bpe-*.gguf")
	if err != nil {
		b.Fatal(err)
	}
	defer os.Remove(tmp.Name())
	err = synth.Write(tmp, synth.Options{Config: cfg, FileType: "Q8_0", Seed: 1, Vocab: v})
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		b.Fatalf("writing %s: %v", path, err)
	}
	return path
}

// countingEngine counts the forward steps of an engine, and can hold the
// first step of a batch until the whole batch has reached the scheduler.
type countingEngine struct {
	decode.Engine
	steps atomic.Int64
	sched *decode.Scheduler // whose requests hold counts
	hold  atomic.Int64      // when > 0, the next step waits for this many pending requests
}

func (e *countingEngine) Forward(b *decode.Batch, out []float32) error {
	if n := e.hold.Swap(0); n > 0 {
		// A request that failed before reaching the scheduler shows in
		// the results; the deadline only keeps the others from hanging.
		deadline := time.Now().Add(5 * time.Second)
		for e.sched.Pending() < int(n) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Microsecond)
		}
	}
	e.steps.Add(1)
	return e.Engine.Forward(b, out)
}

// benchRig is one model served three ways for BenchmarkThroughput.
type benchRig struct {
	eng     decode.Engine
	steps   *countingEngine // eng, counted
	tok     *tokenizer.Tokenizer
	sched   *decode.Scheduler
	ctx     context.Context // runs the scheduler
	url     string          // the HTTP server's completions endpoint
	client  *http.Client    // keeps one connection per stream
	streams int
	tokens  int // generated per stream
	params  decode.SamplerParams
}

type tokVocab struct{ t *tokenizer.Tokenizer }

func (v tokVocab) IsEOG(id int32) bool                { return v.t.IsEOG(id) }
func (v tokVocab) NewTextDecoder() decode.TextDecoder { return v.t.NewStreamDecoder() }

func newBenchRig(b *testing.B, path string, streams int) *benchRig {
	b.Helper()
	f, err := gguf.Open(path)
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
	eng, err := decode.NewCPUEngine(m, decode.CPUOptions{Context: benchTokens + 8, MaxSeqs: streams})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { eng.Close() })
	counted := &countingEngine{Engine: eng}
	sched, err := decode.NewScheduler(counted, tokVocab{tok}, decode.SchedulerConfig{MaxQueue: streams})
	if err != nil {
		b.Fatal(err)
	}
	counted.sched = sched
	runScheduler(b, sched)
	tmpl, err := chat.Fallback("chatml")
	if err != nil {
		b.Fatal(err)
	}
	api := New(Config{ModelName: "bench", Logger: zerolog.Nop()})
	api.SetModel(&Model{Name: "bench", Scheduler: sched, Tokenizer: tok, Chat: renderer(b, tmpl), Created: time.Now()})
	srv := httptest.NewServer(api.Handler())
	b.Cleanup(srv.Close)
	transport := &http.Transport{MaxIdleConnsPerHost: streams, DisableCompression: true}
	b.Cleanup(transport.CloseIdleConnections)
	return &benchRig{
		eng: counted, steps: counted, tok: tok, sched: sched, ctx: b.Context(), streams: streams,
		url:    srv.URL + "/v1/completions",
		client: &http.Client{Transport: transport},
		tokens: benchTokens,
		params: decode.SamplerParams{Temperature: 0, Seed: 1},
	}
}

// engineLoop decodes the batch with Forward and a sampler per sequence.
func (r *benchRig) engineLoop() error {
	vocab := r.eng.VocabSize()
	logits := make([]float32, r.streams*vocab)
	samplers := make([]*decode.Sampler, r.streams)
	next := make([]int32, r.streams)
	for s := range samplers {
		var err error
		if samplers[s], err = decode.NewSampler(r.params, vocab); err != nil {
			return err
		}
		samplers[s].Accept(r.tok.BOS())
		next[s] = r.tok.BOS()
	}
	var batch decode.Batch
	for pos := range r.tokens {
		batch.Reset()
		for s, t := range next {
			batch.Add(t, int32(pos), int32(s), true)
		}
		if err := r.eng.Forward(&batch, logits); err != nil {
			return err
		}
		for s, sp := range samplers {
			got, err := sp.Sample(logits[s*vocab : (s+1)*vocab])
			if err != nil {
				return err
			}
			sp.Accept(got.Token)
			next[s] = got.Token
		}
	}
	return nil
}

// viaScheduler submits the batch to the scheduler and reads every stream.
func (r *benchRig) viaScheduler() error {
	req := decode.Request{Prompt: []int32{r.tok.BOS()}, MaxTokens: r.tokens, Sampling: r.params, IgnoreEOS: true}
	return r.concurrently(func() error {
		st, err := r.sched.Submit(r.ctx, req)
		if err != nil {
			return err
		}
		for {
			ev, err := st.Next(r.ctx)
			if err != nil {
				return err
			}
			if ev.Done {
				if ev.Err != nil {
					return ev.Err
				}
				return r.checkUsage(ev.Usage.CompletionTokens)
			}
		}
	})
}

// viaHTTP streams the batch as completions over HTTP.
func (r *benchRig) viaHTTP() error {
	body := fmt.Sprintf(`{"prompt":[%d],"max_tokens":%d,"temperature":0,"seed":%d,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`,
		r.tok.BOS(), r.tokens, r.params.Seed)
	return r.concurrently(func() error {
		resp, err := r.client.Post(r.url, "application/json", strings.NewReader(body))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %s", resp.Status)
		}
		// Read events as an SSE client does; keep the last chunk (usage).
		in := bufio.NewReader(resp.Body)
		var last []byte
		for {
			line, err := in.ReadSlice('\n')
			if err != nil {
				return fmt.Errorf("stream ended without [DONE]: %w", err)
			}
			data, ok := bytes.CutPrefix(line, []byte("data: "))
			if !ok {
				continue
			}
			if bytes.Equal(data, []byte("[DONE]\n")) {
				// Read to the end so that the connection is reused.
				if _, err := io.Copy(io.Discard, in); err != nil {
					return err
				}
				break
			}
			last = append(last[:0], data...)
		}
		var chunk struct{ Usage *usageJSON }
		if err := json.Unmarshal(last, &chunk); err != nil || chunk.Usage == nil {
			return fmt.Errorf("last chunk %q has no usage (%v)", last, err)
		}
		return r.checkUsage(chunk.Usage.CompletionTokens)
	})
}

// concurrently runs one call of fn per stream at once and returns the
// first error. The scheduler's first step waits until every request is in,
// so that the batch starts together as in engineLoop.
func (r *benchRig) concurrently(fn func() error) error {
	r.steps.hold.Store(int64(r.streams))
	errs := make([]error, r.streams)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = fn() })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (r *benchRig) checkUsage(generated int) error {
	if generated != r.tokens {
		return fmt.Errorf("%d tokens generated, want %d", generated, r.tokens)
	}
	return nil
}
