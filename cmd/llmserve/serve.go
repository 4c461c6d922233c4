package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"llmserve/decode"
	"llmserve/gguf"
	"llmserve/httpapi"
	"llmserve/model"
	"llmserve/model/chat"
	"llmserve/model/tokenizer"
)

// serveOptions are the flags of `llmserve serve`.
type serveOptions struct {
	model         string
	alias         string
	host          string
	port          int
	ctxSize       int
	parallel      int
	batch         int
	threads       int
	gpuLayers     int
	cudaGraphs    bool
	noCUDAGraphs  bool
	graphDump     string
	graphCheck    bool
	graphBuckets  decode.Buckets // --graph-buckets; nil: the default
	noOverlap     bool
	deterministic bool
	apiKey        string
	cors          string
	timeout       time.Duration
	shutdown      time.Duration
	maxGap        time.Duration // --max-decode-gap; 0: off; negative: not given (defaultDecodeGap)
	queue         int
	maxBody       int64
	chatTemplate  string // a built-in format's name, or Jinja source
	webuiPath     string // --webui-path: a folder served at / instead of the chat page
	noWebUI       bool   // --no-webui: no page at /
	noSlots       bool   // --no-slots: GET /slots answers 501
	tp            tpOptions

	// The KV cache (CPU engine): cell types, block size, pool budget,
	// and whether requests may take prompt blocks from the prefix cache.
	cacheTypeK, cacheTypeV decode.KVType
	kvBlock                int
	kvMemory               int64
	kvShare                float64 // --kv-memory N%: a share of the available memory
	noPrefixCache          bool

	// llama-server flags (compat.go)
	chatTemplateFile string              // Jinja chat template file
	defaults         httpapi.GenDefaults // of requests that leave them out (-n, --temp, --top-k, --top-p, -s)
	ubatch           int                 // --ubatch-size; 0: unset
	apiKeyFile       string              // --api-key-file: the key's file
	logFile          string              // --log-file: where log lines go instead of stderr
	logDisable       bool                // --log-disable: no log lines
	verbose          bool                // -v: debug-level log lines
	notes            []string            // one line each about accepted flags that change nothing
	refused          []string            // flags used that llmserve refuses, with what to use instead
}

func serveFlags(o *serveOptions) *flag.FlagSet {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: llmserve [serve] --model model.gguf [flags]

Serves a GGUF model over an OpenAI-style HTTP API:
  POST /v1/completions, POST /v1/chat/completions (both stream with "stream": true),
  GET /v1/models, GET /health (503 while loading), GET /metrics (Prometheus),
  POST /tokenize, POST /detokenize, GET /props, GET /slots, and a chat page at /
  (--no-webui: none; --webui-path DIR: DIR's files instead).
The HTTP port opens before the model has loaded. SIGINT/SIGTERM stop accepting requests,
let running ones finish (up to --shutdown-timeout) and end open streams cleanly.

Other commands (each with --help): llmserve generate, tokenize, inspect, synth, bench,
bench-serve.

llama-server's flags are taken too: those marked "(llama-server)" below either work,
log a line saying llmserve needs no such flag, or stop with what to use instead.

Flags (one or two dashes):
`)
		fs.PrintDefaults()
	}
	str := func(p *string, names, def, usage string) {
		for n := range strings.SplitSeq(names, ",") {
			fs.StringVar(p, n, def, usage)
		}
	}
	num := func(p *int, names string, def int, usage string) {
		for n := range strings.SplitSeq(names, ",") {
			fs.IntVar(p, n, def, usage)
		}
	}
	str(&o.model, "model,m", "", "GGUF model `file` to serve (required)")
	str(&o.alias, "alias,a", "", "model `name` clients use in \"model\" (default: the file name without .gguf)")
	str(&o.host, "host", "127.0.0.1", "`address` to listen on")
	num(&o.port, "port", 8080, "TCP `port` to listen on")
	num(&o.ctxSize, "ctx-size,c", 0, "context `tokens` per request slot (0: the model's trained context, at most 4096)")
	num(&o.parallel, "parallel,np", 4, "request `slots` decoded together (continuous batching)")
	num(&o.batch, "batch-size,b", 512, "most `tokens` in one forward step (decode tokens plus prompt chunks)")
	num(&o.threads, "threads,t", 0, "CPU `threads` (0: all cores)")
	num(&o.gpuLayers, "n-gpu-layers,ngl", -1, "layers on the GPU: -1 the GPU when the build and machine have one, 0 the CPU, N > 0 the GPU (all layers)")
	fs.BoolVar(&o.cudaGraphs, "cuda-graphs", true, "replay each decode step from a CUDA graph captured once per batch size (GPU)")
	fs.BoolVar(&o.noCUDAGraphs, "no-cuda-graphs", false, "launch the same kernels one by one instead of replaying CUDA graphs (GPU)")
	str(&o.graphDump, "graph-dump", "", "write every captured CUDA graph as a DOT file into `dir` (GPU)")
	fs.Func("graph-buckets", graphBucketsUsage, graphBucketsFlag(&o.graphBuckets))
	fs.BoolVar(&o.noOverlap, "no-overlap", false, overlapUsage)
	fs.BoolVar(&o.deterministic, "deterministic", false, deterministicUsage)
	fs.BoolVar(&o.graphCheck, "graph-check", os.Getenv("LLMSERVE_GRAPH_CHECK") == "1", "run every step both eagerly and from its graph and fail if the logits differ by a bit (GPU; slow; also LLMSERVE_GRAPH_CHECK=1)")
	// The default comes from the environment after parsing, so that neither
	// --help nor a flag error prints the key.
	str(&o.apiKey, "api-key", "", "require 'Authorization: Bearer `KEY`' on every route but /health (when not given: $LLMSERVE_API_KEY)")
	str(&o.cors, "cors-origin", "", "comma-separated `origins` allowed to call from a browser (\"*\": any)")
	o.timeout, o.shutdown = 10*time.Minute, 30*time.Second
	for _, n := range []string{"timeout", "to"} {
		fs.Func(n, "longest time one generation request may run, in seconds or as a Go duration (0: no limit; default 10m)", durationFlag(&o.timeout))
	}
	fs.Func("shutdown-timeout", "how long shutdown waits for running requests, in seconds or as a Go duration (default 30s)", durationFlag(&o.shutdown))
	o.maxGap = -1
	fs.Func("max-decode-gap", "keep running streams' inter-token gap within this while prompts are processed: steps with decode tokens take only the prompt tokens that the measured step cost fits (at least 16), in seconds or as a Go duration; 0: prompt chunks fill --batch-size (default: 50ms on the GPU, 0 on the CPU)", durationFlag(&o.maxGap))
	num(&o.queue, "queue", 64, "requests that may wait for a free slot; more get 429")
	fs.Int64Var(&o.maxBody, "max-body", 4<<20, "largest request body in `bytes`")
	str(&o.webuiPath, "webui-path", "", "serve the files of `dir` at / instead of the built-in chat page")
	str(&o.chatTemplate, "chat-template", "", "chat template to use instead of the model's: a built-in `format` ("+strings.Join(chat.FallbackNames(), ", ")+") or Jinja source (text with {% or {{)")
	num(&o.kvBlock, "kv-block-size", decode.DefaultBlockSize, "`tokens` per block of the paged KV cache (CPU; GPU with its paged f16 pool)")
	fs.Func("kv-memory", "memory `budget` of the paged KV cache shared by all slots: bytes, with a K, M, G suffix, or a share of the available memory such as 40% (CPU: of the machine's; GPU, with -ctk f16 -ctv f16: of the device memory the weights leave; default: --parallel full contexts; at least one)", kvMemoryFlag(&o.kvMemory, &o.kvShare))
	fs.BoolVar(&o.noPrefixCache, "no-prefix-cache", false, "compute every prompt in full instead of taking cached KV blocks of its prefix from earlier or running requests")
	addTPFlags(fs, &o.tp)
	addCompatFlags(fs, o)
	return fs
}

func serveCmd(args []string) error {
	var o serveOptions
	fs := serveFlags(&o)
	if err := fs.Parse(joinOptionalValues(args)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("serve: unexpected argument %q", fs.Arg(0))
	}
	if err := o.finish(); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if o.model == "" {
		fs.Usage()
		return errors.New("serve needs --model model.gguf")
	}
	if o.parallel < 1 || o.queue < 0 || o.batch < 1 {
		return fmt.Errorf("serve: --parallel %d, --batch-size %d and --queue %d must be positive", o.parallel, o.batch, o.queue)
	}
	log, closeLog, err := serveLogger(&o)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	defer closeLog()
	for _, n := range o.notes {
		log.Info().Msg(n)
	}
	if o.alias == "" {
		o.alias = strings.TrimSuffix(filepath.Base(o.model), ".gguf")
	}
	var origins []string
	for origin := range strings.SplitSeq(o.cors, ",") {
		if origin = strings.TrimSpace(origin); origin != "" {
			origins = append(origins, origin)
		}
	}
	page, closePage, err := webuiFiles(o)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	defer closePage()
	api := httpapi.New(httpapi.Config{
		ModelName: o.alias, APIKey: o.apiKey, CORSOrigins: origins,
		MaxBodyBytes: o.maxBody, Timeout: o.timeout, Logger: log, Defaults: o.defaults,
		ModelPath: o.model, NoWebUI: o.noWebUI, WebUI: page, NoSlots: o.noSlots,
	})
	addr := net.JoinHostPort(o.host, strconv.Itoa(o.port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	srv := api.HTTPServer()
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(api.Listener(ln)) }()
	log.Info().Str("addr", "http://"+ln.Addr().String()).Str("model", o.model).Msg("listening; loading the model")

	sigs, stopSigs := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSigs()

	start := time.Now()
	loaded, err := loadModel(o, log)
	if err != nil {
		srv.Close()
		return fmt.Errorf("serve: %w", err)
	}
	defer loaded.close()
	runCtx, stopRun := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- loaded.sched.Run(runCtx) }()
	api.SetModel(&httpapi.Model{
		Name: o.alias, Scheduler: loaded.sched, Tokenizer: loaded.tok, Chat: loaded.chat, Created: time.Now(),
	})
	log.Info().Dur("load_ms", time.Since(start)).Int("ctx_size", loaded.engine.ContextSize()).
		Int("slots", loaded.engine.MaxSeqs()).Msg("model loaded; serving")

	select {
	case err := <-serveErr:
		stopRun()
		<-runDone
		return fmt.Errorf("serve: %w", err)
	case <-sigs.Done():
	}
	stopSigs() // a second signal kills at once
	log.Info().Dur("timeout", o.shutdown).Msg("shutting down: finishing running requests")
	loaded.sched.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), o.shutdown)
	defer cancel()
	// Shutdown returns once every handler has returned, streams included;
	// at the deadline the scheduler ends what is still running, and the
	// streams close with an error event.
	shutErr := make(chan error, 1)
	go func() { shutErr <- srv.Shutdown(context.Background()) }()
	select {
	case err = <-shutErr:
	case <-ctx.Done():
		log.Warn().Msg("shutdown timeout: ending running requests")
		stopRun()
		select {
		case err = <-shutErr:
		case <-time.After(5 * time.Second):
			err = srv.Close()
		}
	}
	stopRun()
	<-runDone
	log.Info().Msg("stopped")
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: shutdown: %w", err)
	}
	return nil
}

// durationFlag parses "90" as seconds and "1m30s" as a Go duration, and
// refuses a negative one (every duration flag is a length of time).
// gpuDecodeGap is --max-decode-gap's default on the GPU engine: a step of
// 64 decodes of 8B Q4_K_M takes ~20 ms on the H200, a 512-token prompt
// chunk ~56 ms more, so without a bound a running stream waits ~76 ms
// whenever a prompt is processed; 50 ms keeps the gap under the 60 ms the
// serving target allows at the cost of cutting such chunks to ~270
// tokens. The CPU engine's steps take longer than that by themselves.
const gpuDecodeGap = 50 * time.Millisecond

// decodeGap resolves --max-decode-gap: as given, or where it was not
// (negative) gpuDecodeGap for any engine but the CPU one, which gets 0.
func decodeGap(flagged time.Duration, eng decode.Engine) time.Duration {
	if flagged >= 0 {
		return flagged
	}
	if _, cpu := eng.(*decode.CPUEngine); cpu {
		return 0
	}
	return gpuDecodeGap
}

func durationFlag(dst *time.Duration) func(string) error {
	return func(v string) error {
		d, err := time.ParseDuration(v)
		if n, ferr := strconv.ParseFloat(v, 64); ferr == nil {
			d, err = time.Duration(n*float64(time.Second)), nil
		}
		switch {
		case err != nil:
			return fmt.Errorf("%q is neither seconds nor a duration", v)
		case d < 0:
			return fmt.Errorf("%q is negative", v)
		}
		*dst = d
		return nil
	}
}

// loadedModel is everything serving a model needs.
type loadedModel struct {
	file   *gguf.File
	engine decode.Engine
	sched  *decode.Scheduler
	tok    *tokenizer.Tokenizer
	chat   *chat.Renderer // the chat template, rendered within bounds
}

// loadModel opens the GGUF file and builds the engine, tokenizer, chat
// template and scheduler.
func loadModel(o serveOptions, log zerolog.Logger) (*loadedModel, error) {
	f, m, err := openModel(o.model)
	if err != nil {
		return nil, err
	}
	lm, err := buildModel(f, m, o, log)
	if err != nil {
		f.Close()
		return nil, err
	}
	return lm, nil
}

// close releases the engine, then the mapping its weights may point into.
func (lm *loadedModel) close() {
	lm.chat.Close()
	lm.engine.Close()
	lm.file.Close()
}

func buildModel(f *gguf.File, m *model.Model, o serveOptions, log zerolog.Logger) (*loadedModel, error) {
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return nil, err
	}
	tmpl, err := chatTemplate(o.chatTemplate, tok.ChatTemplate(), log)
	if err != nil {
		return nil, err
	}
	// Templates are code that came with a file: they run in worker
	// processes with bounded time, memory, recursion and output.
	renderer, err := chat.NewRenderer(tmpl, chat.Limits{})
	if err != nil {
		return nil, err
	}
	ctxSize := o.ctxSize
	if ctxSize <= 0 {
		ctxSize = min(m.CtxTrain, 4096)
	}
	if ctxSize > m.CtxTrain {
		log.Warn().Int("ctx_size", ctxSize).Int("ctx_train", m.CtxTrain).Msg("context larger than the model was trained on")
	}
	eng, desc, err := openEngine(m, engineConfig{
		Context: ctxSize, MaxSeqs: o.parallel, MaxBatch: o.batch, Threads: o.threads,
		GPULayers: o.gpuLayers, CUDAGraphs: o.cudaGraphs && !o.noCUDAGraphs,
		GraphDump: o.graphDump, GraphCheck: o.graphCheck, GraphBuckets: o.graphBuckets, NoOverlap: o.noOverlap, Deterministic: o.deterministic,
		CacheTypeK: o.cacheTypeK, CacheTypeV: o.cacheTypeV, KVBlock: o.kvBlock, KVMemory: o.kvMemory, KVShare: o.kvShare,
		Info:     func(s string) { log.Info().Msg(s) },
		Progress: loadProgress(),
		TP:       o.tp,
	}, func(s string) { log.Warn().Msg(s) })
	if err != nil {
		renderer.Close()
		return nil, err
	}
	log.Info().Str("engine", desc).Int("ctx_size", ctxSize).Int("slots", o.parallel).Msg("engine ready")
	logKVCache(log, eng, ctxSize)
	sched, err := decode.NewScheduler(eng, vocab{tok}, decode.SchedulerConfig{
		MaxQueue: o.queue, StepTokens: o.batch, NoPrefixCache: o.noPrefixCache, MaxDecodeGap: decodeGap(o.maxGap, eng),
		OnPanic: func(where string, v any, stack []byte) {
			log.Error().Str("where", where).Interface("panic", v).Bytes("stack", stack).Msg("recovered from a panic")
		},
	})
	if err != nil {
		eng.Close()
		renderer.Close()
		return nil, err
	}
	return &loadedModel{file: f, engine: eng, sched: sched, tok: tok, chat: renderer}, nil
}

// chatTemplate picks the chat template: the flag's Jinja source or named
// fallback, else the model's own, else the fallback that looks like the
// model's, else chatml.
func chatTemplate(name, src string, log zerolog.Logger) (*chat.Template, error) {
	if name != "" {
		t, err := chat.Resolve(name)
		if err != nil {
			return nil, fmt.Errorf("--chat-template: %w", err)
		}
		return t, nil
	}
	if src != "" {
		t, err := chat.New(src)
		if err == nil {
			return t, nil
		}
		name = chat.Detect(src)
		log.Warn().Err(err).Str("fallback", name).Msg("the model's chat template does not compile")
	}
	if name == "" {
		name = "chatml"
	}
	return chat.Fallback(name)
}

// vocab adapts the tokenizer to what the scheduler needs.
type vocab struct{ t *tokenizer.Tokenizer }

func (v vocab) IsEOG(id int32) bool                { return v.t.IsEOG(id) }
func (v vocab) NewTextDecoder() decode.TextDecoder { return v.t.NewStreamDecoder() }

// TokenBytes and Encode give DRY the tokens' text (decode.TokenText).
func (v vocab) TokenBytes(id int32) []byte { return v.t.TokenBytes(id) }
func (v vocab) Encode(text string, addSpecial, parseSpecial bool) ([]int32, error) {
	return v.t.Encode(text, addSpecial, parseSpecial)
}
