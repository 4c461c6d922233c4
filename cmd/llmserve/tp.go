package main

import (
	"flag"
	"fmt"

	"llmserve/internal/nccl"
	"llmserve/model"
)

// tpOptions are the multi-GPU flags of serve, bench and generate.
type tpOptions struct {
	Ranks     int    // -tp: GPUs one model is split over; 1: the single engine
	SplitMode string // --split-mode: "", none, layer or row (llama.cpp's names)
	NCCLLib   string // --nccl-lib: path of libnccl.so.2; "": search the usual places
}

// addTPFlags registers -tp/--tensor-parallel, --split-mode/-sm and
// --nccl-lib on fs.
func addTPFlags(fs *flag.FlagSet, o *tpOptions) {
	for _, n := range []string{"tp", "tensor-parallel"} {
		fs.IntVar(&o.Ranks, n, 1, "split the model over `N` GPUs of this host (tensor parallelism over NCCL; 0 or 1: one GPU)")
	}
	for _, n := range []string{"split-mode", "sm"} {
		fs.StringVar(&o.SplitMode, n, "", "how -tp N > 1 splits the model: `none|layer|row` (row: every matrix, as -tp; layer: blocks spread over the GPUs; default row)")
	}
	fs.StringVar(&o.NCCLLib, "nccl-lib", "", "`path` of libnccl.so.2 for -tp N > 1 (default: the loader's path, the system's and CUDA's lib folders, PyTorch's nvidia/nccl/lib)")
}

// checkTP refuses at start-up what the flags ask and the machine or model
// cannot run, naming what is missing: a split mode or rank count that does
// not fit, a model whose shapes do not split over the ranks, the CPU
// engine, too few GPUs or no NCCL. One rank is today's single engine; a
// split that passes runs on the tensor-parallel GPU engine.
func checkTP(m *model.Model, o tpOptions, gpuLayers int) error {
	switch o.SplitMode {
	case "", "none", "layer", "row":
	default:
		return fmt.Errorf("--split-mode %q: want none, layer or row", o.SplitMode)
	}
	switch {
	case o.Ranks < 0:
		return fmt.Errorf("-tp %d: want a number of GPUs", o.Ranks)
	case o.Ranks <= 1: // 0: not set
		return nil
	case o.SplitMode == "none":
		return fmt.Errorf("-tp %d with --split-mode none: none runs on one GPU; use --split-mode row or leave -tp out", o.Ranks)
	case o.SplitMode == "layer":
		return fmt.Errorf("-tp %d --split-mode layer: the layer split is not built yet; use --split-mode row", o.Ranks)
	}
	plan, err := model.PlanTP(&m.Config, o.Ranks)
	if err != nil {
		return fmt.Errorf("-tp %d: %w", o.Ranks, err)
	}
	if err := plan.Check(m); err != nil {
		return fmt.Errorf("-tp %d: %w", o.Ranks, err)
	}
	if gpuLayers == 0 {
		return fmt.Errorf("-tp %d: tensor parallelism runs on GPUs; -ngl 0 asks for the CPU engine, which runs the model whole (-tp 1)", o.Ranks)
	}
	if err := checkGPUs(o.Ranks); err != nil {
		return fmt.Errorf("-tp %d: %w", o.Ranks, err)
	}
	lib, err := nccl.Open(o.NCCLLib)
	if err != nil {
		return fmt.Errorf("-tp %d: %w", o.Ranks, err)
	}
	return lib.Close()
}
