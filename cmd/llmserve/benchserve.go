package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"
)

// benchServeOptions are the flags of `llmserve bench-serve`.
type benchServeOptions struct {
	url          string        // the server's base URL
	model        string        // "model" in requests; "": the first of GET /v1/models
	apiKey       string        // bearer token; never printed
	endpoint     string        // "completions" or "chat"
	clients      int           // concurrent clients
	requests     int           // requests per client
	promptTokens int           // tokens per prompt, about
	prefixTokens int           // leading tokens every prompt shares
	maxTokens    int           // max_tokens of each request
	ignoreEOS    bool          // ask the server to generate max_tokens tokens
	temperature  float64       // < 0: not sent (the server's default)
	duration     time.Duration // cap on the whole run
	timeout      time.Duration // cap on one request
	seed         uint64        // seeds the prompts' words
	json         bool          // print the report as JSON
	schemaPath   string        // --json-schema file; "": no constrained clients
	schema       []byte        // its JSON, read by check
	share        float64       // share of the clients that send the schema
}

// Bounds of one bench-serve run.
const (
	benchMaxClients  = 1024
	benchMaxRequests = 100000 // clients × requests
	benchMaxDuration = time.Hour
)

func benchServeFlags(o *benchServeOptions) *flag.FlagSet {
	fs := flag.NewFlagSet("bench-serve", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: llmserve bench-serve [--url http://127.0.0.1:8080] [flags]

Load generator for any OpenAI-compatible server (llmserve, llama-server, vLLM):
C concurrent clients each send R streamed requests, one after another, with
prompts of about N tokens (distinct, or sharing a prefix of P tokens). It reports
requests, errors by kind, aggregate generated tokens/s, and the time to the first
token and the gap between tokens (p50/p90/p99). Prompt lengths are set with the
server's /tokenize when it has one, else estimated.
The server is the loopback one unless --url names another. The run stops at
--duration; requests not yet sent then are not counted.
With --json-schema, the share --constrained-share of the clients sends
response_format {"type":"json_schema"} with it (and no ignore_eos, which a
constraint refuses), and tokens/s and gaps are also reported per group,
with how many constrained answers parse as JSON.

Flags:
`)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.url, "url", "http://127.0.0.1:8080", "server base `URL`")
	fs.StringVar(&o.model, "model", "", "\"model\" of the requests (default: the first of GET /v1/models)")
	fs.StringVar(&o.apiKey, "api-key", "", "send 'Authorization: Bearer `KEY`' (when not given: $LLMSERVE_API_KEY, else $OPENAI_API_KEY)")
	fs.StringVar(&o.endpoint, "endpoint", "completions", "`API`: completions (/v1/completions) or chat (/v1/chat/completions)")
	for _, n := range []string{"c", "concurrency"} {
		fs.IntVar(&o.clients, n, 8, "concurrent `clients`")
	}
	for _, n := range []string{"r", "requests"} {
		fs.IntVar(&o.requests, n, 4, "requests per client, one after another")
	}
	fs.IntVar(&o.promptTokens, "prompt-tokens", 128, "prompt length in `tokens` (about)")
	fs.IntVar(&o.prefixTokens, "prefix-tokens", 0, "leading prompt `tokens` all requests share (0: distinct prompts)")
	fs.IntVar(&o.maxTokens, "max-tokens", 64, "max_tokens of each request")
	fs.BoolVar(&o.ignoreEOS, "ignore-eos", false, "send ignore_eos so that every request generates max-tokens tokens")
	fs.Float64Var(&o.temperature, "temperature", -1, "temperature of the requests (negative: not sent)")
	fs.DurationVar(&o.duration, "duration", 10*time.Minute, "longest the whole run may take (at most 1h)")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "longest one request may take")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the prompts' words")
	fs.BoolVar(&o.json, "json", false, "print the report as JSON")
	fs.StringVar(&o.schemaPath, "json-schema", "", "JSON schema `file` that the constrained clients send as response_format")
	fs.Float64Var(&o.share, "constrained-share", 0.5, "share of the clients that send --json-schema")
	return fs
}

// check validates the options and fills the API key from the environment.
func (o *benchServeOptions) check() error {
	u, err := url.Parse(o.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--url %q: want http://host:port", o.url)
	}
	o.url = strings.TrimRight(o.url, "/")
	switch {
	case o.endpoint != "completions" && o.endpoint != "chat":
		return fmt.Errorf("--endpoint %q: want completions or chat", o.endpoint)
	case o.clients < 1 || o.clients > benchMaxClients:
		return fmt.Errorf("-c %d: want 1 to %d clients", o.clients, benchMaxClients)
	case o.requests < 1 || o.clients*o.requests > benchMaxRequests:
		return fmt.Errorf("-r %d: want at least 1 request per client and at most %d in all", o.requests, benchMaxRequests)
	case o.promptTokens < 1 || o.prefixTokens < 0 || o.prefixTokens >= o.promptTokens:
		return fmt.Errorf("--prompt-tokens %d, --prefix-tokens %d: want a prompt of at least 1 token and a prefix shorter than it", o.promptTokens, o.prefixTokens)
	case o.maxTokens < 1:
		return fmt.Errorf("--max-tokens %d: want at least 1", o.maxTokens)
	case o.duration <= 0 || o.duration > benchMaxDuration:
		return fmt.Errorf("--duration %v: want more than 0 and at most %v", o.duration, benchMaxDuration)
	case o.timeout <= 0:
		return fmt.Errorf("--timeout %v: want more than 0", o.timeout)
	case o.share < 0 || o.share > 1:
		return fmt.Errorf("--constrained-share %v: want 0 to 1", o.share)
	}
	if o.schemaPath != "" {
		if err := o.loadSchema(); err != nil {
			return err
		}
	}
	for _, env := range []string{"LLMSERVE_API_KEY", "OPENAI_API_KEY"} {
		if o.apiKey == "" {
			o.apiKey = os.Getenv(env)
		}
	}
	return nil
}

func benchServeCmd(args []string) error {
	var o benchServeOptions
	fs := benchServeFlags(&o)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("bench-serve: unexpected argument %q", fs.Arg(0))
	}
	if err := o.check(); err != nil {
		return fmt.Errorf("bench-serve: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.duration)
	defer cancel()
	rep, err := benchServe(ctx, &o, newBenchClient(o.clients), os.Stderr)
	if err != nil {
		return fmt.Errorf("bench-serve: %w", err)
	}
	if o.json {
		return rep.writeJSON(os.Stdout)
	}
	rep.writeText(os.Stdout)
	return nil
}

// newBenchClient is an HTTP client with a connection per bench client that
// follows no redirect, so that requests go to the given server only.
func newBenchClient(clients int) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = clients, clients
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("bench-serve follows no redirects")
		},
	}
}

// benchServe runs the load and gathers the report; progress lines go to log.
func benchServe(ctx context.Context, o *benchServeOptions, hc *http.Client, log io.Writer) (*benchReport, error) {
	if o.model == "" {
		name, err := firstModel(ctx, hc, o)
		if err != nil {
			return nil, err
		}
		o.model = name
	}
	ps, err := buildPrompts(ctx, hc, o)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "bench-serve: %s %s, model %q: %d clients × %d requests, prompts of ~%d tokens (%d shared), max_tokens %d\n",
		o.url, benchPath(o.endpoint), o.model, o.clients, o.requests, o.promptTokens, o.prefixTokens, o.maxTokens)
	if k := o.constrainedClients(); k > 0 {
		fmt.Fprintf(log, "bench-serve: %d of %d clients send the JSON schema %s\n", k, o.clients, o.schemaPath)
	}
	results := make([]requestResult, o.clients*o.requests)
	var wg sync.WaitGroup
	start := time.Now()
	for c := range o.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range o.requests {
				i := c*o.requests + r
				if ctx.Err() != nil {
					results[i].notSent = true
					continue
				}
				results[i] = streamRequest(ctx, hc, o, ps.prompts[i], c < o.constrainedClients())
			}
		}()
	}
	wg.Wait()
	return summarize(o, ps, results, time.Since(start), ctx.Err() != nil), nil
}
