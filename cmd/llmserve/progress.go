package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mattn/go-isatty"

	"llmserve/decode"
)

// loadProgress returns a progress bar for loading weights drawn on stderr
// when it is a terminal, or nil (no bar) otherwise.
func loadProgress() decode.Progress {
	if !isatty.IsTerminal(os.Stderr.Fd()) {
		return nil
	}
	return progressBar(os.Stderr, "loading weights")
}

// progressBar draws a one-line bar on w, redrawing only when the whole
// percentage changes and ending the line at 100%.
func progressBar(w io.Writer, label string) decode.Progress {
	const width = 30
	last := -1
	return func(done, total int64) {
		if total <= 0 {
			return
		}
		pct := int(done * 100 / total)
		if pct == last {
			return
		}
		last = pct
		fill := pct * width / 100
		fmt.Fprintf(w, "\r%s %3d%% [%s%s] %.2f / %.2f GiB", label, pct,
			strings.Repeat("#", fill), strings.Repeat(" ", width-fill), float64(done)/(1<<30), float64(total)/(1<<30))
		if done >= total {
			fmt.Fprintln(w)
		}
	}
}
