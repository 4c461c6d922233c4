package model

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"llmserve/gguf"
	"llmserve/internal/shared"
)

func load(t *testing.T, rel string) *Model {
	t.Helper()
	f, err := gguf.Open(shared.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	m, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestLoadStories(t *testing.T) {
	m := load(t, "models/stories260K.gguf")
	c := m.Config
	want := Config{Arch: archs["llama"], Name: c.Name, Embd: 64, Layers: 5, Heads: 8, KVHeads: 4, HeadDim: 8, FFN: 172,
		Vocab: 512, CtxTrain: 128, RMSEps: 1e-5, RopeBase: 10000, RopeDim: 8, RopeScale: 1, RopeAttnFactor: 1}
	if c != want {
		t.Errorf("config\n got %+v\nwant %+v", c, want)
	}
	if out := m.Tensors[Output]; out == nil || out.Name != "output.weight" {
		t.Error("stories260K stores output.weight; Output should be it")
	}
}

func TestLoadGolden(t *testing.T) {
	for _, p := range shared.Glob(t, "golden/*.gguf") {
		name := filepath.Base(p)
		t.Run(name, func(t *testing.T) {
			m := load(t, "golden/"+name)
			if m.Embd != 256 || m.Heads != 4 || m.KVHeads != 2 || m.HeadDim != 64 || m.Vocab != 288 {
				t.Errorf("config %+v", m.Config)
			}
			qwen := strings.HasPrefix(name, "tiny-qwen2")
			if m.RopeNeox() != qwen || (m.Layers[0][AttnQBias] != nil) != qwen {
				t.Errorf("arch %s: qwen2 options wrong", m.Arch.Name)
			}
			if tied := strings.Contains(name, "tied"); m.Tied() != tied {
				t.Errorf("tied output = %v, want %v", m.Tied(), tied)
			}
		})
	}
}

func TestLoadVocabOnlyFails(t *testing.T) {
	f, err := gguf.Open(shared.Path(t, "vocab/ggml-vocab-llama-spm.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := Load(f); err == nil || !strings.Contains(err.Error(), "token_embd.weight") {
		t.Errorf("vocab-only file: err = %v, want a missing-tensor error", err)
	}
}

func TestUnsupportedArch(t *testing.T) {
	f, err := gguf.Open(shared.Path(t, "vocab/ggml-vocab-falcon.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := Load(f); !errors.Is(err, ErrUnsupported) {
		t.Errorf("falcon: err = %v, want ErrUnsupported", err)
	}
}
