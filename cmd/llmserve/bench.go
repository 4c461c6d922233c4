package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"llmserve/decode"
	"llmserve/gguf"
)

// benchResult is what one bench configuration measured.
type benchResult struct {
	batch           int // sequences decoded together
	prompt, gen     int // tokens per sequence
	prefill, decode time.Duration
}

func benchCmd(args []string) error { return benchTo(os.Stdout, args) }

// benchTo runs the bench command with its report going to w.
func benchTo(w io.Writer, args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: llmserve bench -m model.gguf [-p 512] [-n 128] [-B 1,4,16] [-c ctx] [-t threads] [-ngl N] [--no-cuda-graphs] [--graph-buckets LIST] [--no-overlap] [--profile] [-ctk T -ctv T]\n       [--json-schema FILE | --grammar FILE] [--constrained-share S]\n\nMeasures prompt processing (one batch of -p tokens) and generation (-n steps after the\nprompt, each one token for each of B sequences) in tokens per second, like llama-bench's\npp and tg; with several B, also the aggregate rate of batched decoding.\n\nWith --json-schema or --grammar, each B is also run with every sequence constrained by\nit and with the share S of them constrained (ctg lines, with the ratio to the\nunconstrained run): constrained rows are picked through the grammar's masks on the\ndevice where the engine applies them (the GPU engine), else\non the host, the rest as the server picks them; each ctg line says which. A run fails when its masks banned nothing or\na finished JSON document does not parse.")
		fs.PrintDefaults()
	}
	var path string
	fs.StringVar(&path, "m", "", "GGUF model `file`")
	fs.StringVar(&path, "model", "", "GGUF model `file`")
	nPrompt := fs.Int("p", 512, "prompt tokens")
	nGen := fs.Int("n", 128, "generation steps")
	batches := fs.String("B", "1", "comma-separated `batch sizes` (sequences decoded together)")
	reps := fs.Int("r", 1, "repetitions (the best is reported)")
	var ctxSize int
	for _, n := range []string{"c", "ctx-size"} {
		fs.IntVar(&ctxSize, n, 0, "context `positions` per sequence (0: -p + -n); a server's -c sizes the attention's splits and, on the GPU's pool, its memory")
	}
	ec := engineConfig{GPULayers: -1, CUDAGraphs: true}
	fs.IntVar(&ec.Threads, "t", 0, "CPU threads (0 = all)")
	fs.IntVar(&ec.GPULayers, "ngl", -1, "layers on the GPU (-1: the GPU when there is one, 0: the CPU)")
	noGraphs := fs.Bool("no-cuda-graphs", false, "launch kernels one by one instead of replaying CUDA graphs")
	fs.Func("graph-buckets", graphBucketsUsage, graphBucketsFlag(&ec.GraphBuckets))
	noOverlap := fs.Bool("no-overlap", false, overlapUsage)
	profile := fs.Bool("profile", false, "also time every kernel of one batch-1 decode step, of one decode step of the largest -B sequences (when above 1) and of one prompt step of -p tokens (at most 512) (GPU engine)")
	fs.BoolVar(&ec.Deterministic, "deterministic", false, deterministicUsage)
	for _, n := range []string{"ctk", "cache-type-k"} {
		fs.Func(n, "KV cache `type` for keys: f16 (default), q8_0 or f32 (GPU: f16 is the paged f16 pool, -ctk f32 -ctv f32 one f32 region per slot)", kvTypeFlag(&ec.CacheTypeK))
	}
	for _, n := range []string{"ctv", "cache-type-v"} {
		fs.Func(n, "KV cache `type` for values: f16, q8_0 or f32", kvTypeFlag(&ec.CacheTypeV))
	}
	addTPFlags(fs, &ec.TP)
	schemaPath := fs.String("json-schema", "", "also run constrained by the JSON schema in `file` (as response_format json_schema)")
	grammarPath := fs.String("grammar", "", "also run constrained by the GBNF grammar in `file`")
	cold := fs.Bool("cold-grammar", false, "give each constrained run a new grammar engine, so that no mask is cached before it (as for a grammar the server has not seen)")
	share := fs.Float64("constrained-share", 0.5, "share of the B sequences constrained in the mixed run (beside all of them)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if path == "" {
		fs.Usage()
		return errors.New("bench needs -m model.gguf")
	}
	if *schemaPath != "" && *grammarPath != "" {
		return errors.New("bench: give --json-schema or --grammar, not both")
	}
	if *share <= 0 || *share > 1 {
		return fmt.Errorf("--constrained-share %v: want more than 0 and at most 1", *share)
	}
	ec.CUDAGraphs = !*noGraphs
	ec.NoOverlap = *noOverlap
	sizes, err := parseInts(*batches)
	if err != nil {
		return fmt.Errorf("-B: %w", err)
	}
	f, m, err := openModel(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var g *benchGrammar
	switch {
	case *schemaPath != "":
		g, err = loadBenchGrammar(f, "json_schema", *schemaPath)
	case *grammarPath != "":
		g, err = loadBenchGrammar(f, "grammar", *grammarPath)
	}
	if err != nil {
		return err
	}
	if g != nil {
		g.cold = *cold
	}
	ec.Context, ec.MaxSeqs = *nPrompt+*nGen, slices.Max(sizes)
	if ctxSize != 0 {
		if ctxSize < ec.Context || ctxSize > 1<<20 {
			return fmt.Errorf("-c %d: want -p + -n (%d) to %d positions", ctxSize, ec.Context, 1<<20)
		}
		ec.Context = ctxSize
	}
	e, desc, err := openEngine(m, ec, func(s string) { fmt.Fprintln(os.Stderr, "llmserve: warning:", s) })
	if err != nil {
		return err
	}
	defer e.Close()
	printBenchHeader(w, path, f, desc+", KV cache: "+kvCacheDesc(e))
	if g != nil {
		masks := "masks cached from run to run"
		if g.cold {
			masks = "a new engine for each run (cold masks)"
		}
		fmt.Fprintf(w, "constraint: %s %s, %d rules, compiled for %d tokens in %v; %s\n", g.kind, g.path, g.rules, g.vocab, g.compile.Round(10*time.Microsecond), masks)
	}
	var example string // the constrained runs' text to show
	for i, B := range sizes {
		free, _, err := benchBest(e, B, *nPrompt, *nGen, *reps, nil, 0)
		if err != nil {
			return err
		}
		printBench(w, f, free, i == 0)
		if g == nil || *nGen == 0 {
			continue
		}
		ks := []int{B}
		if k := constrainedRows(*share, B); k != B {
			ks = append(ks, k)
		}
		for _, k := range ks {
			res, st, err := benchBest(e, B, *nPrompt, *nGen, *reps, g, k)
			if err != nil {
				return err
			}
			if len(st.example) > len(example) {
				example = st.example
			}
			printConstrained(w, res, free, st, g.vocab)
			if err := checkConstrained(st); err != nil {
				return err
			}
		}
	}
	if g != nil && *nGen > 0 {
		fmt.Fprintf(w, "constrained text (first document, or the longest part of one): %.200q\n", example)
	}
	if *profile {
		return profileStep(w, e, *nPrompt, slices.Max(sizes))
	}
	return nil
}

// profileStep prints the device time of every kernel of one decode step
// at position pos of sequence 0, of one decode step of sequences 0..B-1 at
// position pos when B > 1, and of one prompt step of min(pos, 512) tokens.
func profileStep(w io.Writer, e decode.Engine, pos, B int) error {
	p, ok := e.(decode.StepProfiler)
	if !ok {
		return errors.New("--profile needs the GPU engine")
	}
	var b decode.Batch
	b.Add(1, int32(pos), 0, true)
	times, err := p.ProfileStep(&b)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "kernels of one decode step at position %d:\n", pos)
	if err := decode.WriteKernelTable(w, times); err != nil {
		return err
	}
	if B > 1 {
		b.Reset()
		for s := 0; s < B; s++ {
			b.Add(int32(1+s), int32(pos), int32(s), true)
		}
		if times, err = p.ProfileStep(&b); err != nil {
			return err
		}
		fmt.Fprintf(w, "kernels of one decode step of %d sequences at position %d:\n", B, pos)
		if err := decode.WriteKernelTable(w, times); err != nil {
			return err
		}
	}
	n := min(pos, 512)
	if n < 2 {
		return nil
	}
	b.Reset()
	for i := 0; i < n; i++ {
		b.Add(int32(1+i%100), int32(i), 0, i == n-1)
	}
	if times, err = p.ProfileStep(&b); err != nil {
		return err
	}
	fmt.Fprintf(w, "kernels of one prompt step of %d tokens:\n", n)
	return decode.WriteKernelTable(w, times)
}

// benchBest runs benchOnce reps times and keeps the best prefill and
// decode times, and the constraint counts of the fastest decode.
func benchBest(e decode.Engine, B, nPrompt, nGen, reps int, g *benchGrammar, k int) (benchResult, constraintStats, error) {
	var best benchResult
	var bestSt constraintStats
	for r := 0; r < max(reps, 1); r++ {
		res, st, err := benchOnce(e, B, nPrompt, nGen, g, k)
		if err != nil {
			return benchResult{}, constraintStats{}, err
		}
		if r == 0 || res.prefill < best.prefill {
			best.prefill = res.prefill
		}
		if r == 0 || res.decode < best.decode {
			best.decode, bestSt = res.decode, st
		}
		best.batch, best.prompt, best.gen = B, res.prompt, res.gen
	}
	return best, bestSt, nil
}

// benchOnce prefills nPrompt tokens into sequence 0 (once, timed), then runs
// nGen steps that each decode one token for each of B sequences, picked
// greedily as the server picks them: the first k sequences constrained by
// g, on the device with their masks when the engine applies them
// (MaskPicker), else on the host; the others on the device when the engine
// is a Picker, else by the server's own sampler.
func benchOnce(e decode.Engine, B, nPrompt, nGen int, g *benchGrammar, k int) (benchResult, constraintStats, error) {
	V := e.VocabSize()
	if g == nil {
		k = 0
	} else if g.vocab != V {
		return benchResult{}, constraintStats{}, fmt.Errorf("bench: the grammar's vocabulary has %d tokens, the engine %d", g.vocab, V)
	}
	samplers, ms, err := benchSamplers(g, B, k, V)
	if err != nil {
		return benchResult{}, constraintStats{}, err
	}
	var b decode.Batch
	for i := 0; i < nPrompt; i++ {
		b.Add(int32((i*7919+1)%V), int32(i), 0, i == nPrompt-1)
	}
	logits := make([]float32, B*V)
	res := benchResult{batch: B, prompt: nPrompt, gen: nGen}
	start := time.Now()
	if nPrompt > 0 {
		if err := e.Forward(&b, logits); err != nil {
			return benchResult{}, constraintStats{}, err
		}
	}
	res.prefill = time.Since(start)
	toks := make([]int32, B)
	for s := range toks {
		toks[s] = int32(1 + s)
	}
	picker, _ := e.(decode.Picker)
	pickBuf := make([]decode.Pick, B)
	picks := make([]*decode.Pick, B)
	onDevice := 0 // constrained rows the engine picked with their masks
	start = time.Now()
	for i := 0; i < nGen; i++ {
		b.Reset()
		for s := 0; s < B; s++ {
			b.Add(toks[s], int32(nPrompt+i), int32(s), true)
		}
		n, err := benchStep(e, picker, &b, samplers, pickBuf, picks, toks, logits)
		if err != nil {
			return benchResult{}, constraintStats{}, err
		}
		onDevice += n
	}
	res.decode = time.Since(start)
	st := sumMatchers(ms)
	st.picks, st.onDevice = k*nGen, onDevice
	return res, st, nil
}

// benchStep runs one decode step and picks each sequence's next token into
// toks as the scheduler does: the engine picks the rows whose samplers
// allow it (OnDevice, and OnDeviceMasked with their masks when it applies
// them), the host the others, then every sampler takes its token. It
// returns how many constrained rows the engine picked.
func benchStep(e decode.Engine, picker decode.Picker, b *decode.Batch, samplers []*decode.Sampler, pickBuf []decode.Pick, picks []*decode.Pick, toks []int32, logits []float32) (int, error) {
	V := e.VocabSize()
	onDevice := 0
	if picker != nil {
		mp, ok := picker.(decode.MaskPicker)
		masks := ok && mp.PicksMasks()
		for s, sm := range samplers {
			picks[s] = nil
			if sm.OnDevice() || masks && sm.OnDeviceMasked() {
				pickBuf[s] = sm.Pick()
				picks[s] = &pickBuf[s]
			}
		}
		if err := picker.ForwardPick(b, picks, toks, logits); err != nil {
			return 0, err
		}
	} else {
		if err := e.Forward(b, logits); err != nil {
			return 0, err
		}
		for s := range toks {
			toks[s] = -1
		}
	}
	for s, sm := range samplers {
		switch {
		case toks[s] < 0:
			if picker != nil && picks[s] != nil && sm.OnDevice() {
				return 0, errors.New("bench: the engine left a greedy pick to the host")
			}
			row := logits[s*V : (s+1)*V]
			var next decode.Sampled
			var err error
			if picker != nil && picks[s] != nil { // the engine left it: the pick's draw
				next, err = sm.SampleDrawn(row, picks[s].U)
			} else {
				next, err = sm.Sample(row)
			}
			if err != nil {
				return 0, fmt.Errorf("bench: sequence %d: %w", s, err)
			}
			toks[s] = next.Token
		case picks[s] != nil && picks[s].Mask != nil:
			onDevice++
		}
		if err := sm.AcceptSampled(toks[s]); err != nil {
			return 0, fmt.Errorf("bench: sequence %d: %w", s, err)
		}
	}
	return onDevice, nil
}

// weightsPerToken is the bytes of weights a batch-1 decode step reads.
func weightsPerToken(f *gguf.File) int64 {
	var n int64
	for i := range f.Tensors {
		n += readPerToken(f, &f.Tensors[i])
	}
	return n
}

func printBenchHeader(w io.Writer, path string, f *gguf.File, engine string) {
	ft, _ := f.Uint32("general.file_type")
	weights := weightsPerToken(f)
	fmt.Fprintf(w, "model %s (file type %d, %s of weights read per step), engine: %s\n", path, ft, human(weights), engine)
}

func printBench(w io.Writer, f *gguf.File, r benchResult, withPrefill bool) {
	weights := float64(weightsPerToken(f))
	if withPrefill && r.prompt > 0 {
		fmt.Fprintf(w, "pp%d:        %9.1f tok/s\n", r.prompt, float64(r.prompt)/r.prefill.Seconds())
	}
	if r.gen > 0 {
		steps := float64(r.gen) / r.decode.Seconds()
		fmt.Fprintf(w, "tg%d B=%-3d  %9.1f tok/s  (%.1f steps/s, %.1f GB/s of weights; roofline at 4255 GB/s (H200): %.0f steps/s)\n",
			r.gen, r.batch, steps*float64(r.batch), steps, steps*weights/1e9, 4255e9/weights)
	}
}

// parseInts parses a comma-separated list of positive integers.
func parseInts(s string) ([]int, error) {
	var out []int
	for _, p := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("%q is not a positive integer", p)
		}
		out = append(out, v)
	}
	return out, nil
}
