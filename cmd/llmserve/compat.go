package main

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"llmserve/decode"
)

// compatFlag is a llama-server flag that `llmserve serve` takes so that a
// pasted llama-server command line works or says what to use instead: it
// either applies its meaning, notes that llmserve always behaves that way
// (or does not need it), or refuses with a message naming the alternative.
type compatFlag struct {
	names string // comma-separated flag names
	arg   string // the value's name in the help; "": a boolean flag
	// optional marks a flag that is also boolean: `-fa`, `-fa=on` and `-fa on`.
	optional bool
	usage    string // what the flag does in llmserve
	refuse   string // when set, using the flag fails with this message
	note     string // when set, using the flag logs this one line
	// apply, when set, gives the flag its meaning; an error refuses the value.
	apply func(o *serveOptions, v string) error
}

// compatFlags lists the llama-server flags llmserve recognizes beyond its own.
func compatFlags() []compatFlag {
	return []compatFlag{
		{names: "jinja", usage: "always on: chat templates are Jinja", note: "--jinja: llmserve always renders chat templates with Jinja"},
		{names: "no-jinja", usage: "refused: templates are always Jinja",
			refuse: "llmserve always renders chat templates with Jinja; to use a built-in format pass --chat-template chatml, llama2 or llama3"},
		{names: "flash-attn,fa", arg: "on|off|auto", optional: true, usage: "accepted: llmserve picks its attention kernels itself",
			apply: func(o *serveOptions, v string) error {
				switch strings.ToLower(v) {
				case "", "on", "off", "auto", "true", "false", "1", "0":
					o.notes = append(o.notes, "--flash-attn: llmserve picks its attention kernels itself; the flag changes nothing")
					return nil
				}
				return fmt.Errorf("value %q: want on, off or auto", v)
			}},
		{names: "cont-batching,cb", usage: "always on: requests join and leave the running batch at every step",
			note: "--cont-batching: llmserve always batches continuously"},
		{names: "no-cont-batching,nocb", usage: "refused: batching is always continuous",
			refuse: "llmserve always batches continuously; to decode one request at a time use --parallel 1"},
		{names: "metrics", usage: "always on: GET /metrics serves Prometheus metrics", note: "--metrics: llmserve always serves GET /metrics"},
		{names: "n-predict,n", arg: "N", usage: "max_tokens of requests that do not set it (-1: until the context is full)",
			apply: func(o *serveOptions, v string) error {
				n, err := strconv.Atoi(v)
				if err != nil || n < -1 || n == 0 {
					return fmt.Errorf("value %q: want a token count of at least 1, or -1", v)
				}
				o.defaults.MaxTokens = max(n, 0)
				return nil
			}},
		{names: "chat-template-file", arg: "FILE", usage: "Jinja chat template file to use instead of the model's",
			apply: func(o *serveOptions, v string) error { o.chatTemplateFile = v; return nil }},
		{names: "ubatch-size,ub", arg: "N", usage: "most tokens in one forward step, like --batch-size (the smaller of the two wins)",
			apply: func(o *serveOptions, v string) error {
				n, err := strconv.Atoi(v)
				if err != nil || n < 1 {
					return fmt.Errorf("value %q: want a positive token count", v)
				}
				o.ubatch = n
				return nil
			}},
		{names: "threads-batch,tb", arg: "N", usage: "CPU threads for prompts: llmserve uses --threads for prompts and generation alike",
			apply: func(o *serveOptions, v string) error {
				if _, err := strconv.Atoi(v); err != nil {
					return fmt.Errorf("value %q: want a thread count", v)
				}
				o.notes = append(o.notes, "--threads-batch: llmserve uses --threads for prompts and generation alike")
				return nil
			}},
		{names: "cache-type-k,ctk", arg: "TYPE", usage: "KV cache type for keys: f16 (default), q8_0 or f32 (GPU: f16 is its paged f16 pool, -ctk f32 -ctv f32 one f32 region per slot; q8_0 on the CPU only)",
			apply: cacheType(func(o *serveOptions) *decode.KVType { return &o.cacheTypeK })},
		{names: "cache-type-v,ctv", arg: "TYPE", usage: "KV cache type for values: f16 (default), q8_0 or f32 (GPU: f16 is its paged f16 pool, -ctk f32 -ctv f32 one f32 region per slot; q8_0 on the CPU only)",
			apply: cacheType(func(o *serveOptions) *decode.KVType { return &o.cacheTypeV })},
		{names: "device,dev", arg: "DEV", usage: "none: the CPU; CUDA0: the GPU (same as --n-gpu-layers 0 and 99)",
			apply: func(o *serveOptions, v string) error {
				switch strings.ToLower(v) {
				case "none", "cpu":
					o.gpuLayers = 0
				case "cuda0", "cuda", "gpu":
					o.gpuLayers = 99
				default:
					return fmt.Errorf("value %q: llmserve runs on one GPU (CUDA0) or the CPU (none)", v)
				}
				return nil
			}},
		{names: "no-webui", usage: "serve no chat page at / (GET / answers 404)",
			apply: func(o *serveOptions, _ string) error { o.noWebUI = true; return nil }},
		{names: "path", arg: "DIR", usage: "serve the files of DIR at / instead of the built-in chat page (same as --webui-path)",
			apply: func(o *serveOptions, v string) error { o.webuiPath = v; return nil }},
		{names: "mlock", usage: "accepted: llmserve does not lock the model in RAM",
			note: "--mlock: llmserve does not lock the model in RAM; the flag changes nothing"},
		{names: "no-mmap", usage: "accepted: llmserve always maps the model file (the GPU engine copies the weights to the device)",
			note: "--no-mmap: llmserve always maps the model file"},
		{names: "slot-save-path", arg: "DIR", usage: "refused: llmserve does not save slots",
			refuse: "llmserve cannot save or restore slots (GET /slots only shows them); leave the flag out"},
		{names: "log-disable", usage: "write no log lines",
			apply: func(o *serveOptions, _ string) error { o.logDisable = true; return nil }},
		{names: "verbose,v", usage: "log at debug level",
			apply: func(o *serveOptions, _ string) error { o.verbose = true; return nil }},
		{names: "props", usage: "refused: GET /props is read-only (no POST /props)",
			refuse: "llmserve serves GET /props read-only and has no POST /props; give generation defaults with --temp, --top-k, --top-p, -n and -s, or in each request"},
		{names: "seed,s", arg: "N", usage: "seed of requests that do not set \"seed\" (-1 or unset: a random seed per request)",
			apply: func(o *serveOptions, v string) error {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil || n < -1 {
					return fmt.Errorf("value %q: want a seed of 0 or more, or -1", v)
				}
				if n >= 0 {
					o.defaults.Seed = &n
				}
				return nil
			}},
		{names: "temp", arg: "T", usage: "temperature of requests that do not set it (default 0.8)",
			apply: func(o *serveOptions, v string) error {
				f, err := strconv.ParseFloat(v, 32)
				if err != nil || f < 0 || f > 100 {
					return fmt.Errorf("value %q: want a temperature from 0 to 100", v)
				}
				t := float32(f)
				o.defaults.Temperature = &t
				return nil
			}},
		{names: "top-k", arg: "N", usage: "top_k of requests that do not set it (default 40; 0: off)",
			apply: func(o *serveOptions, v string) error {
				n, err := strconv.Atoi(v)
				if err != nil || n < 0 {
					return fmt.Errorf("value %q: want 0 (off) or more", v)
				}
				o.defaults.TopK = &n
				return nil
			}},
		{names: "top-p", arg: "P", usage: "top_p of requests that do not set it (default 0.95)",
			apply: func(o *serveOptions, v string) error {
				f, err := strconv.ParseFloat(v, 32)
				if err != nil || f < 0 || f > 1 {
					return fmt.Errorf("value %q: want a probability from 0 to 1", v)
				}
				p := float32(f)
				o.defaults.TopP = &p
				return nil
			}},
		{names: "hf-repo,hf", arg: "REPO", usage: "refused: download the GGUF file and pass --model",
			refuse: "llmserve does not download models; download the GGUF file and pass --model file.gguf"},
		{names: "embeddings,embedding", usage: "refused: llmserve serves generation only",
			refuse: "llmserve has no embeddings endpoint; it serves /v1/completions and /v1/chat/completions"},
		{names: "no-warmup", usage: "accepted: llmserve does not run a warm-up step", note: "--no-warmup: llmserve does not run a warm-up step"},
		{names: "api-key-file", arg: "FILE", usage: "read the API key from the file's first line (one key only)",
			apply: func(o *serveOptions, v string) error { o.apiKeyFile = v; return nil }},
		{names: "log-file", arg: "FILE", usage: "append the log lines to FILE instead of stderr",
			apply: func(o *serveOptions, v string) error { o.logFile = v; return nil }},
		{names: "no-context-shift", usage: "always on: generation stops when the context is full",
			note: "--no-context-shift: llmserve never shifts the context; generation stops when it is full"},
		{names: "context-shift", usage: "refused: llmserve does not shift the context",
			refuse: "llmserve does not shift the context: generation stops when it is full; give a larger -c (context per slot) instead"},
		{names: "cache-reuse", arg: "N", usage: "accepted: every cached full KV block of a prompt's prefix is reused, from any request (--no-prefix-cache: none)",
			note: "--cache-reuse: llmserve reuses every cached full KV block of a prompt's prefix, from any earlier or running request (--no-prefix-cache turns it off); the flag changes nothing"},
		{names: "reasoning-format", arg: "FORMAT", usage: "accepted: reasoning text stays in the message content (like none)",
			note: "--reasoning-format: llmserve leaves reasoning text in the message content, as llama-server's none does"},
		{names: "main-gpu,mg", arg: "N", usage: "0 only: llmserve runs on the first GPU",
			apply: func(o *serveOptions, v string) error {
				if v != "0" {
					return fmt.Errorf("value %q: llmserve runs on GPU 0; pick another with CUDA_VISIBLE_DEVICES", v)
				}
				return nil
			}},
		{names: "tensor-split,ts", arg: "SPLIT", usage: "refused: llmserve runs on one GPU",
			refuse: "llmserve runs the whole model on one GPU; leave the flag out (CUDA_VISIBLE_DEVICES picks the GPU)"},
		{names: "threads-http", arg: "N", usage: "accepted: llmserve serves HTTP from goroutines",
			note: "--threads-http: llmserve serves every connection from its own goroutine; the flag changes nothing"},
		{names: "numa", arg: "MODE", usage: "accepted: llmserve does not place threads by NUMA node",
			note: "--numa: llmserve does not place threads by NUMA node; the flag changes nothing"},
		{names: "no-kv-offload,nkvo", usage: "accepted: the KV cache lives with the engine (device memory on the GPU)",
			note: "--no-kv-offload: llmserve keeps the KV cache where the engine runs; the flag changes nothing"},
		{names: "log-colors,log-timestamps,log-prefix", usage: "accepted: llmserve's log lines are JSON (with colour on a terminal)",
			note: "--log-colors/--log-timestamps/--log-prefix: llmserve's log lines are JSON with timestamps, coloured on a terminal"},
		{names: "verbosity,lv,log-verbosity", arg: "N", usage: "log at debug level when N > 3 (llama.cpp's debug level)",
			apply: func(o *serveOptions, v string) error {
				n, err := strconv.Atoi(v)
				if err != nil {
					return fmt.Errorf("value %q: want a number", v)
				}
				o.verbose = o.verbose || n > 3
				return nil
			}},
		{names: "slots", usage: "always on: GET /slots shows each slot's state", note: "--slots: llmserve always serves GET /slots"},
		{names: "no-slots", usage: "turn GET /slots off (it answers 501)",
			apply: func(o *serveOptions, _ string) error { o.noSlots = true; return nil }},
		{names: "lora,lora-scaled,model-draft,md,mmproj,grammar,json-schema", arg: "VALUE", usage: "refused: not supported by llmserve",
			refuse: "llmserve does not support this (LoRA adapters, draft models, multimodal projectors and grammars); leave it out"},
		{names: "rope-scaling,rope-scale,rope-freq-base,rope-freq-scale,yarn-orig-ctx,yarn-ext-factor", arg: "VALUE", usage: "refused: llmserve uses the model's RoPE settings",
			refuse: "llmserve takes RoPE settings from the model's GGUF metadata; leave the flag out"},
		{names: "ssl-key-file,ssl-cert-file", arg: "FILE", usage: "refused: llmserve serves plain HTTP",
			refuse: "llmserve serves plain HTTP; put a TLS-terminating proxy in front of it"},
	}
}

// cacheType reads a KV cache type by its llama.cpp name into the option
// field returns.
func cacheType(field func(o *serveOptions) *decode.KVType) func(o *serveOptions, v string) error {
	return func(o *serveOptions, v string) error { return kvTypeFlag(field(o))(v) }
}

// kvTypeFlag reads a KV cache type by its llama.cpp name into dst (the
// bench command's -ctk and -ctv, and through cacheType serve's).
func kvTypeFlag(dst *decode.KVType) func(string) error {
	return func(v string) error {
		t, err := decode.ParseKVType(v)
		if err != nil {
			return fmt.Errorf("value %q: f16, q8_0 or f32", v)
		}
		*dst = t
		return nil
	}
}

// compatValue is one registered compatFlag: it records its use into the
// options, and refusals as errors that serveCmd reports after parsing.
type compatValue struct {
	f    compatFlag
	name string
	o    *serveOptions
}

func (c *compatValue) String() string { return "" }

func (c *compatValue) IsBoolFlag() bool { return c.f.arg == "" || c.f.optional }

func (c *compatValue) Set(v string) error {
	if c.f.arg == "" && c.f.apply == nil {
		if b, err := strconv.ParseBool(v); err != nil || !b {
			if err != nil {
				return err
			}
			return nil // --metrics=false and the like: nothing to do
		}
	}
	switch {
	case c.f.refuse != "":
		c.o.refused = append(c.o.refused, fmt.Sprintf("-%s: %s", c.name, c.f.refuse))
	case c.f.apply != nil:
		if c.IsBoolFlag() && v == "true" {
			v = ""
		}
		if err := c.f.apply(c.o, v); err != nil {
			c.o.refused = append(c.o.refused, fmt.Sprintf("-%s: %v", c.name, err))
		}
	case c.f.note != "":
		c.o.notes = append(c.o.notes, c.f.note)
	}
	return nil
}

// addCompatFlags registers compatFlags on fs.
func addCompatFlags(fs *flag.FlagSet, o *serveOptions) {
	for _, f := range compatFlags() {
		usage := "(llama-server) " + f.usage
		if f.arg != "" {
			usage += " (takes `" + f.arg + "`)"
		}
		for n := range strings.SplitSeq(f.names, ",") {
			fs.Var(&compatValue{f: f, name: n, o: o}, n, usage)
		}
	}
}

// joinOptionalValues rewrites `-fa on` as `-fa=on` so that both llama-server
// spellings parse; a bare `-fa` stays a boolean.
func joinOptionalValues(args []string) []string {
	var optional []string // names of the flags whose value is optional
	for _, f := range compatFlags() {
		if f.optional {
			optional = append(optional, strings.Split(f.names, ",")...)
		}
	}
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		name := strings.TrimLeft(a, "-")
		// serve takes no arguments, so a word after such a flag is its value.
		if strings.HasPrefix(a, "-") && slices.Contains(optional, name) && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			out = append(out, a+"="+args[i+1])
			i++
			continue
		}
		out = append(out, a)
	}
	return out
}
