package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"llmserve/model/tokenizer"
)

func tokenizeCmd(args []string) error {
	fs := flag.NewFlagSet("tokenize", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: llmserve tokenize --model model.gguf [--add-special] [--parse-special] < text\n\nPrints the token ids of all of standard input, space-separated, on one line.")
		fs.PrintDefaults()
	}
	var path string
	fs.StringVar(&path, "model", "", "GGUF model or vocabulary `file`")
	fs.StringVar(&path, "m", "", "GGUF model or vocabulary `file` (short for --model)")
	addSpecial := fs.Bool("add-special", false, "add BOS/EOS as the vocabulary asks")
	parseSpecial := fs.Bool("parse-special", false, "take control tokens such as <|eot_id|> whole from the text")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if path == "" {
		fs.Usage()
		return errors.New("tokenize needs --model file.gguf")
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("tokenize: unexpected arguments %q (the text is read from standard input)", fs.Args())
	}
	tok, err := tokenizer.Load(path)
	if err != nil {
		return err
	}
	text, err := io.ReadAll(os.Stdin)
	if err != nil {
		return fmt.Errorf("tokenize: reading standard input: %w", err)
	}
	ids, err := tok.Encode(string(text), *addSpecial, *parseSpecial)
	if err != nil {
		return err
	}
	_, err = fmt.Println(joinIDs(ids))
	return err
}

// joinIDs writes ids in decimal, separated by single spaces.
func joinIDs(ids []int32) string {
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(int(id)))
	}
	return b.String()
}
