package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"llmserve/decode"
	"llmserve/gguf"
	"llmserve/model"
)

func init() { commands["bench"] = benchCmd }

// benchResult is what one bench run measured.
type benchResult struct {
	prompt, gen     int
	prefill, decode time.Duration
}

func benchCmd(args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: llmserve bench -m model.gguf [-p 512] [-n 128] [-t threads]\n\nMeasures prompt processing (one batch of -p tokens) and generation (-n tokens one at a\ntime after the prompt, batch 1) in tokens per second, like llama-bench's pp and tg.")
		fs.PrintDefaults()
	}
	var path string
	fs.StringVar(&path, "m", "", "GGUF model `file`")
	fs.StringVar(&path, "model", "", "GGUF model `file`")
	nPrompt := fs.Int("p", 512, "prompt tokens")
	nGen := fs.Int("n", 128, "generated tokens")
	threads := fs.Int("t", 0, "CPU threads (0 = all)")
	reps := fs.Int("r", 1, "repetitions (the best is reported)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if path == "" {
		fs.Usage()
		return errors.New("bench needs -m model.gguf")
	}
	f, err := gguf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	m, err := model.Load(f)
	if err != nil {
		return err
	}
	e, err := decode.NewCPUEngine(m, decode.CPUOptions{Context: *nPrompt + *nGen, Threads: *threads})
	if err != nil {
		return err
	}
	defer e.Close()
	best := benchResult{prompt: *nPrompt, gen: *nGen}
	for r := 0; r < max(*reps, 1); r++ {
		res, err := benchOnce(e, *nPrompt, *nGen)
		if err != nil {
			return err
		}
		if r == 0 || res.prefill < best.prefill {
			best.prefill = res.prefill
		}
		if r == 0 || res.decode < best.decode {
			best.decode = res.decode
		}
	}
	printBench(os.Stdout, path, f, best)
	return nil
}

// benchOnce prefills nPrompt tokens, then generates nGen tokens greedily.
func benchOnce(e decode.Engine, nPrompt, nGen int) (benchResult, error) {
	V := e.VocabSize()
	var b decode.Batch
	for i := 0; i < nPrompt; i++ {
		b.Add(int32((i*7919+1)%V), int32(i), 0, i == nPrompt-1)
	}
	logits := make([]float32, V)
	start := time.Now()
	if nPrompt > 0 {
		if err := e.Forward(&b, logits); err != nil {
			return benchResult{}, err
		}
	}
	res := benchResult{prompt: nPrompt, gen: nGen, prefill: time.Since(start)}
	start = time.Now()
	tok := int32(1)
	for i := 0; i < nGen; i++ {
		b.Reset()
		b.Add(tok, int32(nPrompt+i), 0, true)
		if err := e.Forward(&b, logits); err != nil {
			return benchResult{}, err
		}
		tok = int32(maxIndex(logits))
	}
	res.decode = time.Since(start)
	return res, nil
}

func maxIndex(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

func printBench(w io.Writer, path string, f *gguf.File, r benchResult) {
	var weights int64
	for i := range f.Tensors {
		weights += readPerToken(f, &f.Tensors[i])
	}
	ft, _ := f.Uint32("general.file_type")
	fmt.Fprintf(w, "model %s (file type %d, %s read per token)\n", path, ft, human(weights))
	if r.prompt > 0 {
		fmt.Fprintf(w, "pp%d: %8.1f tok/s\n", r.prompt, float64(r.prompt)/r.prefill.Seconds())
	}
	if r.gen > 0 {
		tps := float64(r.gen) / r.decode.Seconds()
		fmt.Fprintf(w, "tg%d: %8.1f tok/s  (%.2f GB/s of weights)\n", r.gen, tps, tps*float64(weights)/1e9)
	}
}
