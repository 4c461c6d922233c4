//go:build cuda

package decode

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"llmserve/grammar"
	"llmserve/model"
)

// gpuMaskRow is one row of TestGPUMaskedPick: how it samples and which
// tokens its constraint allows.
type gpuMaskRow struct {
	p    SamplerParams
	mask string // all, one, none, half, sparse; "" unconstrained
}

// allowedOf is a random set of tokens of kind (see gpuMaskRow).
func allowedOf(rng *rand.Rand, kind string, vocab int) []int32 {
	var ids []int32
	for id := range int32(vocab) {
		if kind == "all" || kind == "half" && rng.IntN(2) == 0 || kind == "sparse" && rng.IntN(200) == 0 {
			ids = append(ids, id)
		}
	}
	if kind == "one" {
		ids = append(ids, rng.Int32N(int32(vocab)))
	}
	return ids
}

// TestGPUMaskedPick checks the constrained rows the engine picks with
// their masks against the host sampler under the same
// constraint and draw over the same logits, on the 288-token golden model
// and a synthetic one of the 128256-token llama-bpe vocabulary: greedy and
// sampled rows, masks that allow everything, one token, nothing (the row
// comes back to the host, whose pick fails as without the device), half
// or a few tokens, beside an unconstrained and a host-only row. A row left
// to the host carries logits from which the host picks what it picks from
// the reference's.
func TestGPUMaskedPick(t *testing.T) {
	models := []struct {
		name string
		m    func(t *testing.T) *model.Model
		rows []gpuMaskRow
	}{
		{"golden-288", func(t *testing.T) *model.Model { return loadModel(t, "golden/tiny-llama-Q4_K_M.gguf") }, []gpuMaskRow{
			{SamplerParams{}, "all"}, {SamplerParams{}, "one"}, {SamplerParams{}, "none"}, {SamplerParams{}, "half"},
			{SamplerParams{Temperature: 0.9}, "half"},
			{SamplerParams{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05}, "all"},
			{SamplerParams{Temperature: 1.5, TopP: 0.9}, "sparse"},
			{SamplerParams{Temperature: 1, MinP: 0.2}, "one"},
			{SamplerParams{Temperature: 0.9}, ""},
			{SamplerParams{Temperature: 1, RepeatPenalty: 1.1, PenaltyLastN: 8}, "half"}, // host
		}},
		// Over 128256 tokens the sampled rows keep few candidates, so that
		// no draw falls within rounding of an interval's edge.
		{"llama-bpe-128256", func(t *testing.T) *model.Model { return synthModel(t, "llama", "tiny", "Q4_K_M", true) }, []gpuMaskRow{
			{SamplerParams{}, "all"}, {SamplerParams{}, "one"}, {SamplerParams{}, "none"}, {SamplerParams{}, "half"}, {SamplerParams{}, "sparse"},
			{SamplerParams{Temperature: 0.8, TopK: 20}, "half"},
			{SamplerParams{Temperature: 1, TopK: 40, TopP: 0.9, MinP: 0.05}, "all"},
			{SamplerParams{Temperature: 1, TopK: 100}, "sparse"},
			{SamplerParams{Temperature: 1, MinP: 0.2}, "one"},
			{SamplerParams{}, ""},
		}},
	}
	for _, mc := range models {
		t.Run(mc.name, func(t *testing.T) {
			m := mc.m(t)
			rows := mc.rows
			opts := GPUOptions{Context: 64, MaxSeqs: len(rows), Graphs: true}
			e, ref := openGPU(t, m, opts), openGPU(t, m, opts)
			if !e.PicksMasks() {
				t.Fatal("the engine applies no masks")
			}
			V := e.VocabSize()
			rng := rand.New(rand.NewPCG(uint64(V), 1))
			picked, left, none := 0, 0, 0
			for step := range 12 {
				var b Batch
				picks := make([]*Pick, len(rows))
				us := make([]float32, len(rows))
				cons := make([]*setConstraint, len(rows))
				for s, row := range rows {
					b.Add(int32((step*31+s*7)%V), int32(step), int32(s), true)
					p := row.p
					p.Seed = uint64(step*10 + s)
					if row.mask != "" {
						cons[s] = &setConstraint{allowed: allowedOf(rng, row.mask, V)}
						p.Constraint = cons[s]
					}
					smp, err := NewSampler(p, V)
					if err != nil {
						t.Fatal(err)
					}
					if !smp.OnDeviceMasked() {
						continue
					}
					pk := smp.Pick()
					picks[s], us[s] = &pk, pk.U
				}
				toks := make([]int32, len(rows))
				logits := make([]float32, len(rows)*V)
				if err := e.ForwardPick(&b, picks, toks, logits); err != nil {
					t.Fatal(err)
				}
				want := make([]float32, len(rows)*V)
				if err := ref.Forward(&b, want); err != nil {
					t.Fatal(err)
				}
				for s, row := range rows {
					p := row.p
					if cons[s] != nil {
						p.Constraint = cons[s]
					}
					host := func(x []float32) (int32, error) {
						smp, err := NewSampler(p, V)
						if err != nil {
							t.Fatal(err)
						}
						got, err := smp.SampleDrawn(x, us[s])
						return got.Token, err
					}
					w, werr := host(want[s*V : (s+1)*V])
					what := fmt.Sprintf("step %d row %d (%+v, mask %q, u %.6f)", step, s, row.p, row.mask, us[s])
					if toks[s] < 0 {
						left++
						g, gerr := host(logits[s*V : (s+1)*V])
						if g != w || (gerr == nil) != (werr == nil) {
							t.Errorf("%s: left to the host, which picks %d (%v) from its logits, %d (%v) from the reference's", what, g, gerr, w, werr)
						}
						if werr != nil {
							none++
						} else if picks[s] != nil {
							t.Errorf("%s: a pick the device could apply left to the host", what)
						}
						continue
					}
					picked++
					if werr != nil {
						t.Errorf("%s: device picked %d, the host fails: %v", what, toks[s], werr)
					} else if toks[s] != w {
						t.Errorf("%s: device picked %d, host %d", what, toks[s], w)
					}
				}
			}
			t.Logf("%d rows picked on the device, %d left to the host (%d with nothing allowed)", picked, left, none)
			if picked == 0 || none == 0 {
				t.Errorf("%d rows picked, %d with nothing allowed: want some of each", picked, none)
			}
		})
	}
}

// maskCounter is a MaskPicker that counts the masked picks it passes to
// the engine and those the engine picked; with hide it reports that it
// applies no masks, so that the scheduler picks constrained rows on the
// host.
type maskCounter struct {
	*GPUEngine
	hide bool

	mu             sync.Mutex // guards the counts
	masked, onDevs int
}

func (c *maskCounter) PicksMasks() bool { return !c.hide && c.GPUEngine.PicksMasks() }

func (c *maskCounter) ForwardPick(b *Batch, picks []*Pick, toks []int32, logits []float32) error {
	err := c.GPUEngine.ForwardPick(b, picks, toks, logits)
	c.mu.Lock()
	defer c.mu.Unlock()
	for r, p := range picks {
		if p != nil && p.Mask != nil {
			c.masked++
			if toks[r] >= 0 {
				c.onDevs++
			}
		}
	}
	return err
}

// TestGPUSchedulerMasked runs JSON-schema constrained requests, greedy and
// sampled, beside unconstrained ones through the scheduler on the GPU
// engine of a synthetic 128256-token model, once with the constrained rows
// picked on the device and once on the host: the tokens must be the same
// (Deterministic keeps every row's logits independent of its batch).
func TestGPUSchedulerMasked(t *testing.T) {
	tok, v := llamaBPE(t)
	m := synthModel(t, "llama", "tiny", "Q4_K_M", true)
	if m.Vocab != v.Size() {
		t.Fatalf("model vocabulary %d, llama-bpe %d", m.Vocab, v.Size())
	}
	g, err := grammar.CompileSchema([]byte(personSchema), grammar.SchemaOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	ge, err := grammar.NewEngine(g, v)
	if err != nil {
		t.Fatal(err)
	}
	reqs := []SamplerParams{{}, {Temperature: 1, TopK: 40, Seed: 3}, {Temperature: 0.7, TopP: 0.9, MinP: 0.05, Seed: 4}, {Temperature: 0.9, Seed: 5}}
	constrained := []bool{true, true, true, false}
	run := func(hide bool) ([]result, *maskCounter) {
		c := &maskCounter{GPUEngine: openGPU(t, m, GPUOptions{Context: 256, MaxSeqs: 4, Graphs: true, Deterministic: true}), hide: hide}
		s := startSchedulerVocab(t, c, tokVocab{tok}, SchedulerConfig{MaxQueue: 8})
		out := make([]result, len(reqs))
		var wg sync.WaitGroup
		for i, p := range reqs {
			if constrained[i] {
				mt, err := ge.NewMatcher()
				if err != nil {
					t.Fatal(err)
				}
				p.Constraint = mt
			}
			st, err := s.Submit(context.Background(), Request{Prompt: []int32{128000, 1, 2, 3}, MaxTokens: 100, Sampling: p})
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() { out[i] = collect(t, st) })
		}
		wg.Wait()
		return out, c
	}
	want, hostRun := run(true)
	got, devRun := run(false)
	for i := range got {
		if !slices.Equal(got[i].tokens, want[i].tokens) || got[i].final.Err != nil {
			t.Errorf("request %d: on the device %q (%v), on the host %q (%v), first difference at %s", i,
				got[i].text, got[i].final.Err, want[i].text, want[i].final.Err, firstDiff(got[i].tokens, want[i].tokens))
		}
	}
	t.Logf("masked picks: %d offered, %d picked on the device", devRun.masked, devRun.onDevs)
	if hostRun.masked != 0 || devRun.onDevs == 0 {
		t.Errorf("masked picks: %d offered with masks hidden, %d picked on the device: want none and some", hostRun.masked, devRun.onDevs)
	}
}
