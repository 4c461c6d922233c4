package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"llmserve/gguf"
	"llmserve/model"
)

func inspectCmd(args []string) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: llmserve inspect [--kv] file.gguf\n\nPrints the architecture, hyperparameters, tokenizer, every tensor and the bytes of weights read per generated token.")
		fs.PrintDefaults()
	}
	allKV := fs.Bool("kv", false, "print every metadata key and value")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("inspect needs exactly one GGUF file")
	}
	f, err := gguf.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	defer f.Close()
	return inspect(os.Stdout, f, fs.Arg(0), *allKV)
}

// inspect prints what f holds. It fails when the file has tensors but does
// not load as a model, after printing everything it could.
func inspect(w io.Writer, f *gguf.File, path string, allKV bool) (err error) {
	arch, _ := f.String("general.architecture")
	fmt.Fprintf(w, "file: %s (GGUF v%d, %s, %d metadata keys, %d tensors, alignment %d)\n",
		path, f.Version, human(f.Size()), len(f.KV), len(f.Tensors), f.Alignment)
	fmt.Fprintf(w, "architecture: %s\n", arch)
	// A file with tensors that does not load as a model is an error once
	// everything else about it has been printed.
	var loadErr error
	if len(f.Tensors) > 0 {
		if m, err := model.LoadChecked(f); err != nil {
			loadErr = err
			fmt.Fprintf(w, "model: %v\n", err)
		} else {
			c := m.Config
			fmt.Fprintf(w, "hyperparameters: embd %d, layers %d, heads %d, kv heads %d, head dim %d, ffn %d, vocab %d, trained context %d, rms eps %g, rope base %g, rope dim %d, rope neox %v, tied output %v\n",
				c.Embd, c.Layers, c.Heads, c.KVHeads, c.HeadDim, c.FFN, c.Vocab, c.CtxTrain, c.RMSEps, c.RopeBase, c.RopeDim, m.RopeNeox(), m.Tied())
		}
	}
	printTokenizer(w, f)
	if allKV {
		for _, kv := range f.KV {
			fmt.Fprintf(w, "  %s = %s\n", kv.Key, showValue(kv.Value))
		}
	}
	if len(f.Tensors) == 0 {
		fmt.Fprintln(w, "tensors: none (vocabulary-only file)")
		return nil
	}
	defer func() {
		if err == nil {
			err = loadErr
		}
	}()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "tensor\ttype\tshape\tbytes\t")
	var total, perToken int64
	byType := map[gguf.Type]int64{}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		fmt.Fprintf(tw, "%s\t%s\t%v\t%d\t\n", t.Name, t.Type, t.Dims, t.Size)
		total += t.Size
		byType[t.Type] += t.Size
		perToken += readPerToken(f, t)
	}
	tw.Flush()
	fmt.Fprintf(w, "total: %d tensors, %s of weights", len(f.Tensors), human(total))
	types := slices.Sorted(maps.Keys(byType))
	for _, t := range types {
		fmt.Fprintf(w, ", %s %s", t, human(byType[t]))
	}
	fmt.Fprintf(w, "\nweights read per generated token: %s (%d bytes); roofline at 4255 GB/s (H200): %.0f tok/s\n",
		human(perToken), perToken, 4255e9/float64(max(perToken, 1)))
	return nil
}

// readPerToken is the bytes of t a decode step reads: all of every matrix,
// but only one row of the token embedding (unless it is also the output).
func readPerToken(f *gguf.File, t *gguf.TensorInfo) int64 {
	if t.Name == "token_embd.weight" {
		if _, hasOutput := f.Tensor("output.weight"); hasOutput {
			return t.Size / max(t.Rows(), 1)
		}
	}
	if strings.Contains(t.Name, "_exps.") {
		// A token reads only its chosen experts' slices of an expert
		// mixture's 3-D tensors.
		if n, k := expertCounts(f); n > 0 && k > 0 && k <= n {
			return t.Size / int64(n) * int64(k)
		}
	}
	return t.Size
}

// expertCounts is the expert mixture's expert count and the experts each
// token uses, from the architecture's metadata (0, 0 without a mixture).
func expertCounts(f *gguf.File) (n, k int) {
	arch, err := f.String("general.architecture")
	if err != nil {
		return 0, 0
	}
	nn, err1 := f.Int64(arch + ".expert_count")
	kk, err2 := f.Int64(arch + ".expert_used_count")
	if err1 != nil || err2 != nil || nn <= 0 || kk <= 0 || nn > 1<<16 {
		return 0, 0
	}
	return int(nn), int(kk)
}

func printTokenizer(w io.Writer, f *gguf.File) {
	tm, err := f.String("tokenizer.ggml.model")
	if err != nil {
		fmt.Fprintln(w, "tokenizer: none")
		return
	}
	pre, _ := f.String("tokenizer.ggml.pre")
	toks, _ := f.Strings("tokenizer.ggml.tokens")
	merges, _ := f.Strings("tokenizer.ggml.merges")
	var ids []string
	for _, k := range []string{"bos", "eos", "eot", "unknown", "padding"} {
		if v, err := f.Int64("tokenizer.ggml." + k + "_token_id"); err == nil {
			ids = append(ids, fmt.Sprintf("%s %d", k, v))
		}
	}
	tmpl, _ := f.String("tokenizer.chat_template")
	fmt.Fprintf(w, "tokenizer: %s, pre %q, %d tokens, %d merges, %s, chat template %d bytes\n",
		tm, pre, len(toks), len(merges), strings.Join(ids, ", "), len(tmpl))
}

func showValue(v gguf.Value) string {
	if a, ok := v.V.(gguf.Array); ok {
		return fmt.Sprintf("[%d × %s]", a.Len(), a.Type)
	}
	s := fmt.Sprintf("%v", v.V)
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return strings.ReplaceAll(s, "\n", `\n`)
}

func human(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, u := float64(n), "KMGTP"
	i := -1
	for v >= unit && i < len(u)-1 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.2f %ciB", v, u[i])
}
