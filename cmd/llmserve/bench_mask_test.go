package main

import (
	"bytes"
	"strings"
	"testing"

	"llmserve/decode"
)

// maskingEngine is a decode.MaskPicker over a host engine that does what
// a device that applies masks does: greedy over the tokens a pick's mask
// allows (-1 where none is left), greedy over all tokens without a mask.
type maskingEngine struct {
	decode.Engine
	masked int // masked picks it picked
}

func (e *maskingEngine) PicksMasks() bool { return true }

func (e *maskingEngine) ForwardPick(b *decode.Batch, picks []*decode.Pick, toks []int32, logits []float32) error {
	if err := e.Forward(b, logits); err != nil {
		return err
	}
	V := e.VocabSize()
	for r, p := range picks {
		toks[r] = -1
		if p == nil {
			continue
		}
		best := float32(0)
		for i, l := range logits[r*V : (r+1)*V] {
			if p.Mask != nil && p.Mask[i/64]>>(i%64)&1 == 0 || l != l {
				continue
			}
			if toks[r] < 0 || l > best {
				toks[r], best = int32(i), l
			}
		}
		if p.Mask != nil && toks[r] >= 0 {
			e.masked++
		}
	}
	return nil
}

// TestBenchConstrainedOnDevice runs bench's constrained steps on an engine
// that applies masks: the constrained rows are given to it with their
// masks, it picks every one, the documents that end parse, and the report
// says the rows were picked on the device; on the plain CPU engine it
// says the host.
func TestBenchConstrainedOnDevice(t *testing.T) {
	model := benchModel(t)
	f, m, err := openModel(model)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	path := writeTemp(t, t.TempDir(), "small.json", `{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"],"additionalProperties":false}`)
	g, err := loadBenchGrammar(f, "json_schema", path)
	if err != nil {
		t.Fatal(err)
	}
	cpu, _, err := openEngine(m, engineConfig{Context: 64, MaxSeqs: 4, Threads: 1, MaxBatch: 64}, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	for _, tt := range []struct {
		name   string
		eng    decode.Engine
		where  string
		device bool
	}{
		{"masks", &maskingEngine{Engine: cpu}, "picked on the device with their masks", true},
		{"host", cpu, "picked on the host", false},
	} {
		free, _, err := benchOnce(tt.eng, 4, 4, 40, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		res, st, err := benchOnce(tt.eng, 4, 4, 40, g, 2)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if err := checkConstrained(st); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
		if st.picks != 2*40 || (st.onDevice == st.picks) != tt.device || !tt.device && st.onDevice != 0 {
			t.Errorf("%s: %d of %d constrained picks on the device, want all: %v", tt.name, st.onDevice, st.picks, tt.device)
		}
		if me, ok := tt.eng.(*maskingEngine); ok && me.masked != st.onDevice {
			t.Errorf("%s: the engine picked %d masked rows, bench counted %d", tt.name, me.masked, st.onDevice)
		}
		if st.docs == 0 {
			t.Errorf("%s: no document ended in 40 tokens", tt.name)
		}
		var out bytes.Buffer
		printConstrained(&out, res, free, st, g.vocab)
		if !strings.Contains(out.String(), "; "+tt.where+"; ") || !ctgLine.MatchString(strings.TrimSpace(out.String())) {
			t.Errorf("%s: report %q does not say %q", tt.name, out.String(), tt.where)
		}
	}
}
