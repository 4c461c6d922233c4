//go:build !cuda

package main

import (
	"io"
	"slices"
	"strings"
	"testing"

	"llmserve/decode"
	"llmserve/internal/shared"
	"llmserve/model"
)

// TestOpenEngineCPUWarnings: on a build without the GPU engine, the CPU
// engine's KV settings are used as given, with no word of the GPU.
func TestOpenEngineCPUWarnings(t *testing.T) {
	f, m, err := model.Open(shared.Path(t, "models/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tests := []struct {
		name string
		c    engineConfig
	}{
		{"q8_0 keys", engineConfig{GPULayers: -1, CacheTypeK: decode.KVQ8_0}},
		{"q8_0 values", engineConfig{GPULayers: -1, CacheTypeV: decode.KVQ8_0}},
		{"kv memory", engineConfig{GPULayers: -1, KVMemory: 1 << 20}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.c.Context, tt.c.MaxSeqs, tt.c.MaxBatch, tt.c.Threads, tt.c.KVBlock = 128, 2, 64, 1, 32
			var warnings []string
			e, desc, err := openEngine(m, tt.c, func(s string) { warnings = append(warnings, s) })
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			for _, w := range warnings {
				if strings.Contains(w, "GPU") {
					t.Errorf("%s engine, warned %q", desc, w)
				}
			}
		})
	}
}

// TestGraphBucketsFlag parses --graph-buckets for serve and bench: a good
// list reaches the options, a bad one stops the command with its reason.
func TestGraphBucketsFlag(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want decode.Buckets
		err  string // a substring of the error; "" for none
	}{
		{args: nil, want: nil},
		{args: []string{"--graph-buckets", "1,4,16"}, want: decode.Buckets{1, 4, 16}},
		{args: []string{"--graph-buckets=8"}, want: decode.Buckets{8}},
		{args: []string{"--graph-buckets", "1,4,2"}, err: "size 2 follows 4"},
		{args: []string{"--graph-buckets", "1,128"}, err: "size 128 out of range 1..64"},
		{args: []string{"--graph-buckets", ""}, err: "empty list"},
	} {
		var o serveOptions
		fs := serveFlags(&o)
		fs.SetOutput(io.Discard)
		err := fs.Parse(tt.args)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("serve %q: %v", tt.args, err)
		case tt.err == "" && !slices.Equal(o.graphBuckets, tt.want):
			t.Errorf("serve %q: buckets %v, want %v", tt.args, o.graphBuckets, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "graph-buckets")):
			t.Errorf("serve %q: error %v, want one naming --graph-buckets and %q", tt.args, err, tt.err)
		}
		if tt.err == "" {
			continue
		}
		// bench refuses the list before it opens the model.
		err = benchTo(io.Discard, append([]string{"-m", "no-such-file.gguf"}, tt.args...))
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("bench %q: error %v, want one with %q", tt.args, err, tt.err)
		}
	}
}

// TestOpenEngineCPUGraphBuckets: graph buckets on the CPU engine are
// refused with a warning, not an error.
func TestOpenEngineCPUGraphBuckets(t *testing.T) {
	f, m, err := model.Open(shared.Path(t, "models/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var warnings []string
	c := engineConfig{GPULayers: -1, Context: 128, MaxSeqs: 1, MaxBatch: 64, Threads: 1, KVBlock: 32, GraphBuckets: decode.Buckets{1, 8}}
	e, _, err := openEngine(m, c, func(s string) { warnings = append(warnings, s) })
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if len(warnings) != 1 || !strings.Contains(warnings[0], "--graph-buckets") {
		t.Errorf("warnings %q, want one about --graph-buckets", warnings)
	}
}
