package main

import (
	"io"
	"strings"
	"testing"

	"llmserve/internal/shared"
	"llmserve/model"
)

func TestCheckTP(t *testing.T) {
	f, m, err := model.Open(shared.Path(t, "models/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tests := []struct {
		name      string
		o         tpOptions
		gpuLayers int
		want      string // in the error; "": none
	}{
		{"one rank", tpOptions{Ranks: 1}, -1, ""},
		{"unset", tpOptions{}, 0, ""},
		{"one rank, row", tpOptions{Ranks: 1, SplitMode: "row"}, -1, ""},
		{"negative", tpOptions{Ranks: -2}, -1, "want a number of GPUs"},
		{"bad mode", tpOptions{Ranks: 2, SplitMode: "rows"}, -1, `--split-mode "rows": want none, layer or row`},
		{"none over two", tpOptions{Ranks: 2, SplitMode: "none"}, -1, "none runs on one GPU"},
		{"layer", tpOptions{Ranks: 2, SplitMode: "layer"}, -1, "the layer split is not built yet"},
		{"heads do not split", tpOptions{Ranks: 3}, -1, "8 query heads over 3 ranks"},
		{"cpu engine", tpOptions{Ranks: 2, SplitMode: "row"}, 0, "-ngl 0 asks for the CPU engine"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkTP(m, tt.o, tt.gpuLayers)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("checkTP: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("checkTP: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestTPFlagsParse(t *testing.T) {
	tests := []struct {
		args []string
		want tpOptions
	}{
		{[]string{"-m", "x"}, tpOptions{Ranks: 1}},
		{[]string{"-m", "x", "-tp", "2", "-sm", "row"}, tpOptions{Ranks: 2, SplitMode: "row"}},
		{[]string{"-m", "x", "--tensor-parallel", "4", "--split-mode", "layer", "--nccl-lib", "/opt/libnccl.so.2"},
			tpOptions{Ranks: 4, SplitMode: "layer", NCCLLib: "/opt/libnccl.so.2"}},
	}
	for _, tt := range tests {
		o, err := parseServe(tt.args, io.Discard)
		if err != nil {
			t.Errorf("%v: %v", tt.args, err)
			continue
		}
		if o.tp != tt.want {
			t.Errorf("%v: parsed %+v, want %+v", tt.args, o.tp, tt.want)
		}
	}
}

// TestTPStartupErrors: bench and generate refuse a split they cannot run
// before loading any weights.
func TestTPStartupErrors(t *testing.T) {
	path := shared.Path(t, "models/stories260K.gguf")
	tests := []struct {
		name string
		run  func() error
		want string
	}{
		{"generate on the CPU", func() error { return generateCmd([]string{"-m", path, "-n", "1", "-tp", "2", "-ngl", "0"}) }, "-ngl 0 asks for the CPU engine"},
		{"bench shape", func() error {
			return benchTo(io.Discard, []string{"-m", path, "-p", "4", "-n", "1", "--tensor-parallel", "3"})
		}, "8 query heads over 3 ranks"},
		{"bench mode", func() error {
			return benchTo(io.Discard, []string{"-m", path, "-p", "4", "-n", "1", "-tp", "2", "-sm", "none"})
		}, "none runs on one GPU"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.run(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%v, want an error containing %q", err, tt.want)
			}
		})
	}
}
