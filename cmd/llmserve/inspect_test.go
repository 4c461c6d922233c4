package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"llmserve/gguf"
	"llmserve/internal/shared"
	"llmserve/model"
	"llmserve/model/synth"
)

// TestInspectShared runs inspect on every GGUF file of the shared data.
func TestInspectShared(t *testing.T) {
	for _, p := range shared.Glob(t, "*/*.gguf") {
		f, err := gguf.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		err = inspect(&b, f, p, true)
		// inspect fails exactly when the file has tensors and does not
		// load (golden-arch holds architectures llmserve does not run).
		var loadErr error
		if len(f.Tensors) > 0 {
			_, loadErr = model.LoadChecked(f)
		}
		f.Close()
		if (err != nil) != (loadErr != nil) {
			t.Errorf("%s: inspect error %v, load error %v", p, err, loadErr)
		}
		if !strings.Contains(b.String(), "tokenizer: ") {
			t.Errorf("%s: no tokenizer line:\n%s", p, b.String())
		}
		if len(f.Tensors) > 0 && !strings.Contains(b.String(), "total: ") {
			t.Errorf("%s: tensor table missing:\n%s", p, b.String())
		}
	}
}

// TestInspectMalformed checks that a damaged file gives one error line.
func TestInspectMalformed(t *testing.T) {
	src, err := os.ReadFile(shared.Path(t, "models/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cut.gguf")
	if err := os.WriteFile(path, src[:5000], 0o644); err != nil {
		t.Fatal(err)
	}
	err = inspectCmd([]string{path})
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "cut.gguf") {
		t.Errorf("inspect of a cut file: err = %v, want one line naming the file", err)
	}
}

// TestInspectUnloadableModel checks that a file that parses but does not
// load as a model (a NaN epsilon) still prints its tensors and then fails.
func TestInspectUnloadableModel(t *testing.T) {
	path := writeTinyModel(t, func(r *synth.Raw) {
		r.Set("llama.attention.layer_norm_rms_epsilon", gguf.Value{Type: gguf.ValueFloat32, V: float32(math.NaN())})
	})
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b strings.Builder
	err = inspect(&b, f, path, false)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "epsilon") {
		t.Errorf("err = %v, want one line about the epsilon", err)
	}
	if !strings.Contains(b.String(), "token_embd.weight") {
		t.Errorf("tensor table missing:\n%s", b.String())
	}
}

// writeTinyModel writes a tiny synthetic llama, changed by edit, into a
// temporary folder and returns its path.
func writeTinyModel(t *testing.T, edit func(r *synth.Raw)) string {
	t.Helper()
	cfg, err := synth.Tiny("llama")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := synth.Write(&buf, synth.Options{Config: cfg, FileType: "F32", Seed: 1, Workers: 1}); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	r := synth.RawFrom(f)
	edit(r)
	data, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "model.gguf")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestWeightsPerTokenExperts checks that a token of an expert mixture is
// counted as reading only its chosen experts' share of the 3-D expert
// tensors (golden-arch's tiny Mixtral-style model), every other tensor
// whole.
func TestWeightsPerTokenExperts(t *testing.T) {
	f, err := gguf.Open(shared.Path(t, "golden-arch/tiny-mixtral-F32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, k := expertCounts(f)
	if n < 2 || k < 1 || k >= n {
		t.Fatalf("expert counts %d, %d: want a mixture that uses fewer experts than it has", n, k)
	}
	var all, sizes, experts int64
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		all += readPerToken(f, ti)
		sizes += ti.Size
		if strings.Contains(ti.Name, "_exps.") {
			experts += ti.Size
			if got, want := readPerToken(f, ti), ti.Size/int64(n)*int64(k); got != want {
				t.Errorf("%s: %d bytes a token, want %d (%d of %d experts)", ti.Name, got, want, k, n)
			}
		}
	}
	if experts == 0 {
		t.Fatal("no expert tensors (*_exps.*) in the model")
	}
	if got := weightsPerToken(f); got != all {
		t.Errorf("weightsPerToken %d, want the tensors' sum %d", got, all)
	}
	// The unchosen experts' bytes at least are not read by a token.
	if unread := experts - experts/int64(n)*int64(k); all > sizes-unread {
		t.Errorf("%d bytes a token of %d in the tensors: want at most %d (the %d of %d unchosen experts' %d bytes left out)", all, sizes, sizes-unread, n-k, n, unread)
	}
}
