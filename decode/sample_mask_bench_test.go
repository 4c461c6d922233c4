package decode

import (
	"math/rand/v2"
	"testing"

	"llmserve/grammar"
	"llmserve/internal/shared"
	"llmserve/model/tokenizer"
)

// BenchmarkConstrainedSample reports one greedy pick over the 128256
// llama-bpe logits, plain and under a JSON-schema constraint whose masks
// are cached (the constraint is advanced through a document, so the
// figure is the sampler's share: the mask, copying and banning), and the
// host's share of a masked pick on an engine that applies masks (the mask
// into the pick, no pass over the logits). Both constrained figures
// include a new matcher and sampler per document.
func BenchmarkConstrainedSample(b *testing.B) {
	tok, err := tokenizer.Load(shared.Path(b, "vocab/ggml-vocab-llama-bpe.gguf"))
	if err != nil {
		b.Fatal(err)
	}
	v, err := grammar.VocabOf(tok)
	if err != nil {
		b.Fatal(err)
	}
	g, err := grammar.CompileSchema([]byte(personSchema), grammar.SchemaOptions{Strict: true})
	if err != nil {
		b.Fatal(err)
	}
	e, err := grammar.NewEngine(g, v)
	if err != nil {
		b.Fatal(err)
	}
	doc, err := tok.Encode(`{"name": "Ada", "age": 36, "tags": ["red", "blue"], "ok": true}`, false, false)
	if err != nil {
		b.Fatal(err)
	}
	logits := make([]float32, v.Size())
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range logits {
		logits[i] = float32(rng.NormFloat64())
	}
	b.Run("plain", func(b *testing.B) {
		s, _ := NewSampler(SamplerParams{}, v.Size())
		for b.Loop() {
			if _, err := s.Sample(logits); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("constrained", func(b *testing.B) {
		run := func() {
			m, _ := e.NewMatcher()
			s, _ := NewSampler(SamplerParams{Constraint: m}, v.Size())
			for _, id := range doc {
				if _, err := s.Sample(logits); err != nil {
					b.Fatal(err)
				}
				if err := s.AcceptSampled(id); err != nil {
					b.Fatal(err)
				}
			}
		}
		run() // fill the mask cache
		b.ResetTimer()
		for b.Loop() {
			run()
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*len(doc)), "µs/token")
	})
	// The host's share when an engine applies the masks (MaskPicker): the
	// pick with its mask, and advancing the constraint.
	b.Run("masked pick", func(b *testing.B) {
		run := func() {
			m, _ := e.NewMatcher()
			s, _ := NewSampler(SamplerParams{Constraint: m}, v.Size())
			for _, id := range doc {
				if p := s.Pick(); p.Mask == nil {
					b.Fatal("a constrained pick without its mask")
				}
				if err := s.AcceptSampled(id); err != nil {
					b.Fatal(err)
				}
			}
		}
		run()
		b.ResetTimer()
		for b.Loop() {
			run()
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*len(doc)), "µs/token")
	})
}
