package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"llmserve/gguf"
	"llmserve/model/synth"
)

const synthUsage = `usage: llmserve synth --arch llama|qwen2|qwen3|gemma2|phi3|mixtral --shape SHAPE --type TYPE [--vocab vocab.gguf] [--seed N] -o out.gguf

Writes a model with the architecture, shapes, tensor names and metadata of a
real one and random weights drawn from the seed (the same flags give the same
bytes). Its text is noise: it serves tests, benchmarks and demos.

Shapes (embedding, layers, heads/KV heads, head dim, feed-forward):
  llama tiny  256, 4, 8/4, 32, 768, tied output, rope 500000, llama3 rope_freqs
  llama 1b    Llama-3.2-1B: 2048, 16, 32/8, 64, 8192, tied output
  llama 8b    Llama-3.1-8B: 4096, 32, 32/8, 128, 14336, separate output.weight
  qwen2 tiny  256, 4, 8/4, 32, 768, tied, rope 1e6, Q/K/V biases
  qwen2 1b    Qwen2.5-1.5B: 1536, 28, 12/2, 128, 8960, tied
  qwen2 8b    Qwen2.5-7B: 3584, 28, 28/4, 128, 18944, separate output.weight
  qwen3 tiny  256, 4, 8/4, 64, 768, tied, rope 1e6, Q/K norms
  qwen3 1b    Qwen3-1.7B: 2048, 28, 16/8, 128, 6144, tied
  qwen3 8b    Qwen3-8B: 4096, 36, 32/8, 128, 12288, separate output.weight
  gemma2 tiny 256, 4, 4/2, 64, 768, tied, window 64, soft-caps 50/30
  gemma2 2b   Gemma-2-2B: 2304, 26, 8/4, 256, 9216, tied, window 4096, soft-caps 50/30
  gemma2 9b   Gemma-2-9B: 3584, 42, 16/8, 256, 14336, tied, window 4096, soft-caps 50/30
  phi3 tiny   256, 4, 8/8, 32, 768, fused attn_qkv and gate/up, window 2047
  phi3 mini   Phi-3.5-mini: 3072, 32, 32/32, 96, 8192, LongRoPE factors (original context 4096)
  mixtral tiny  256, 4, 8/4, 32, expert FFN 512, 4 experts, 2 per token, tied
  mixtral 8x7b  Mixtral-8x7B: 4096, 32, 32/8, 128, expert FFN 14336, 8 experts, 2 per token

The vocabulary size is the token count of --vocab, whose tokenizer.* metadata
(tokens, merges, scores, special ids, chat template...) is copied. Without
--vocab a built-in 261-token byte-level vocabulary with Llama 3's special
tokens and chat template is used.

Flags:
`

func runSynth(args []string) error {
	fs := flag.NewFlagSet("synth", flag.ContinueOnError)
	arch := fs.String("arch", "llama", "architecture: "+strings.Join(synth.Arches, ", "))
	shape := fs.String("shape", "tiny", "shape: tiny, or one that --arch has (see above)")
	typ := fs.String("type", "F16", "file type: "+strings.Join(synth.FileTypes(), ", "))
	vocabPath := fs.String("vocab", "", "GGUF file whose tokenizer metadata the model gets (default: built-in byte-level vocabulary)")
	seed := fs.Uint64("seed", 1, "random seed")
	out := fs.String("o", "", "output GGUF file (required)")
	workers := fs.Int("workers", 0, "goroutines that generate and quantize (default GOMAXPROCS)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), synthUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("synth: unexpected arguments %q", fs.Args())
	}
	if *out == "" {
		return errors.New("synth: -o out.gguf is required")
	}
	cfg, err := synth.Shape(*arch, *shape)
	if err != nil {
		return err
	}
	opts := synth.Options{Config: cfg, FileType: *typ, Seed: *seed, Workers: *workers}
	if *vocabPath != "" {
		v, err := gguf.Open(*vocabPath)
		if err != nil {
			return fmt.Errorf("synth: vocabulary: %w", err)
		}
		defer v.Close()
		opts.Vocab = v
	}
	return writeModel(*out, opts)
}

// writeModel writes the model to path, removing the partial file on failure.
func writeModel(path string, opts synth.Options) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := synth.Write(f, opts); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return err
	}
	return nil
}
