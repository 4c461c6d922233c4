package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"strconv"
	"strings"

	"llmserve/decode"
	"llmserve/model/tokenizer"
)

// stopList collects repeated --stop flags.
type stopList []string

func (s *stopList) String() string     { return fmt.Sprint(*s) }
func (s *stopList) Set(v string) error { *s = append(*s, v); return nil }

func generateCmd(args []string) (err error) {
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: llmserve generate -m model.gguf [-p PROMPT] [-n N] [--temp T] [--seed S] ...\n\nStreams the continuation of PROMPT to standard output. An empty prompt starts from BOS.")
		fs.PrintDefaults()
	}
	var path, prompt string
	var stops stopList
	fs.StringVar(&path, "m", "", "GGUF model `file`")
	fs.StringVar(&path, "model", "", "GGUF model `file`")
	fs.StringVar(&prompt, "p", "", "prompt text")
	fs.StringVar(&prompt, "prompt", "", "prompt text")
	n := fs.Int("n", 128, "tokens to generate (-1 = until EOS or the context is full)")
	ctxSize := fs.Int("c", 0, "context size in tokens (0 = the model's, extended to fit the prompt and -n)")
	threads := fs.Int("t", 0, "CPU threads (0 = all)")
	gpuLayers := fs.Int("ngl", -1, "layers on the GPU (-1: the GPU when there is one, 0: the CPU)")
	noGraphs := fs.Bool("no-cuda-graphs", false, "launch kernels one by one instead of replaying CUDA graphs")
	noOverlap := fs.Bool("no-overlap", false, overlapUsage)
	deterministic := fs.Bool("deterministic", false, deterministicUsage)
	parseSpecial := fs.Bool("special", false, "parse special-token text (e.g. <|eot_id|>) in the prompt")
	fs.Var(&stops, "stop", "stop `string` (repeatable)")
	var sp decode.SamplerParams
	fs.Func("temp", "temperature (0 = greedy; default 0.8)", floatFlag(&sp.Temperature))
	sp.Temperature = 0.8
	fs.IntVar(&sp.TopK, "top-k", 40, "top-k sampling (0 = off)")
	fs.Func("top-p", "top-p sampling (1 = off; default 0.95)", floatFlag(&sp.TopP))
	sp.TopP = 0.95
	fs.Func("min-p", "min-p sampling (0 = off; default 0.05)", floatFlag(&sp.MinP))
	sp.MinP = 0.05
	fs.Func("repeat-penalty", "repeat penalty (1 = off)", floatFlag(&sp.RepeatPenalty))
	fs.Func("presence-penalty", "presence penalty", floatFlag(&sp.PresencePenalty))
	fs.Func("frequency-penalty", "frequency penalty", floatFlag(&sp.FrequencyPenalty))
	fs.IntVar(&sp.PenaltyLastN, "repeat-last-n", 64, "tokens the penalties look back over")
	seed := fs.Uint64("seed", 0, "random seed (0 = random)")
	var tp tpOptions
	addTPFlags(fs, &tp)
	dumpDir := fs.String("dump-tensors", "", "write every named intermediate (blk.N.attn_norm, ...) of every token to `DIR`, one f32 file per name and position with an index.tsv (runs on the CPU)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if path == "" {
		fs.Usage()
		return errors.New("generate needs -m model.gguf")
	}
	sp.Seed = *seed
	if sp.Seed == 0 {
		sp.Seed = randomSeed()
	}
	f, m, err := openModel(path)
	if err != nil {
		return err
	}
	defer f.Close()
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return err
	}
	ids, err := tok.Encode(prompt, true, *parseSpecial)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		ids = []int32{tok.BOS()}
	}
	ctxLen := *ctxSize
	if ctxLen <= 0 {
		ctxLen = m.CtxTrain
		if *n > 0 && len(ids)+*n > ctxLen {
			ctxLen = len(ids) + *n
		}
	}
	if ctxLen > m.CtxTrain {
		fmt.Fprintf(os.Stderr, "llmserve: warning: context of %d tokens is larger than the %d the model was trained on\n", ctxLen, m.CtxTrain)
	}
	if *dumpDir != "" && *gpuLayers != 0 {
		if *gpuLayers > 0 {
			fmt.Fprintln(os.Stderr, "llmserve: warning: --dump-tensors runs on the CPU engine")
		}
		*gpuLayers = 0
	}
	e, _, err := openEngine(m, engineConfig{Context: ctxLen, MaxSeqs: 1, Threads: *threads, GPULayers: *gpuLayers, CUDAGraphs: !*noGraphs, NoOverlap: *noOverlap, Deterministic: *deterministic, TP: tp},
		func(s string) { fmt.Fprintln(os.Stderr, "llmserve: warning:", s) })
	if err != nil {
		return err
	}
	defer e.Close()
	if *dumpDir != "" {
		d, err := dumpTo(e, *dumpDir)
		if err != nil {
			return err
		}
		defer func() {
			if cerr := d.Close(); err == nil {
				err = cerr
			}
		}()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	return generate(ctx, e, tok, ids, *n, sp, stops, out)
}

// dumpTo has the CPU engine e write its intermediates to dir.
func dumpTo(e decode.Engine, dir string) (*decode.DirDump, error) {
	ce, ok := e.(*decode.CPUEngine)
	if !ok {
		return nil, errors.New("--dump-tensors needs the CPU engine")
	}
	d, err := decode.NewDirDump(dir)
	if err != nil {
		return nil, err
	}
	ce.SetTensorDump(d.Dump)
	return d, nil
}

// generate prefills prompt and streams up to n sampled tokens' text to out.
func generate(ctx context.Context, e decode.Engine, tok *tokenizer.Tokenizer, prompt []int32, n int, sp decode.SamplerParams, stops []string, out *bufio.Writer) error {
	if len(prompt) >= e.ContextSize() {
		return fmt.Errorf("prompt of %d tokens does not fit the context of %d", len(prompt), e.ContextSize())
	}
	sampler, err := decode.NewSampler(sp, e.VocabSize())
	if err != nil {
		return err
	}
	for _, id := range prompt {
		sampler.Accept(id)
	}
	var b decode.Batch
	for i, id := range prompt {
		b.Add(id, int32(i), 0, i == len(prompt)-1)
	}
	logits := make([]float32, e.VocabSize())
	dec := tok.NewStreamDecoder()
	stopper := decode.NewStopMatcher(stops)
	// Like SentencePiece's decoder, drop the space the tokenizer put before
	// the first word when the text starts right after BOS.
	trimSpace := len(prompt) == 1 && prompt[0] == tok.BOS()
	emit := func(piece string) bool {
		if trimSpace && piece != "" {
			piece, trimSpace = strings.TrimPrefix(piece, " "), false
		}
		text, stopped := stopper.Push(piece)
		out.WriteString(text)
		out.Flush()
		return stopped
	}
	for pos := len(prompt); n < 0 || pos < len(prompt)+n; pos++ {
		if ctx.Err() != nil {
			break
		}
		if err := e.Forward(&b, logits); err != nil {
			return err
		}
		s, err := sampler.Sample(logits)
		if err != nil {
			return err
		}
		if tok.IsEOG(s.Token) {
			break
		}
		sampler.Accept(s.Token)
		if emit(dec.Add(s.Token)) {
			return nil
		}
		if pos >= e.ContextSize() {
			break
		}
		b.Reset()
		b.Add(s.Token, int32(pos), 0, true)
	}
	if !emit(dec.Flush()) {
		out.WriteString(stopper.Flush())
	}
	out.WriteString("\n")
	return nil
}

// floatFlag parses a flag value into a float32.
func floatFlag(dst *float32) func(string) error {
	return func(s string) error {
		v, err := strconv.ParseFloat(s, 32)
		if err != nil {
			return err
		}
		*dst = float32(v)
		return nil
	}
}

// randomSeed draws a seed for a run that asked for none.
func randomSeed() uint64 { return rand.Uint64() | 1 }
