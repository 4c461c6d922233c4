package grammar

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// benchSchema has 20 properties of the usual kinds; benchDoc is a value
// of it.
func benchSchema() (schema, doc string) {
	kinds := []struct{ schema, value string }{
		{`{"type":"string"}`, `"Ada Lovelace"`},
		{`{"type":"integer"}`, `1815`},
		{`{"type":"number"}`, `-3.25e2`},
		{`{"type":"boolean"}`, `true`},
		{`{"enum":["draft","final","archived"]}`, `"final"`},
		{`{"type":"array","items":{"type":"string"},"maxItems":8}`, `["math", "engines", "poetry"]`},
		{`{"type":"string","format":"date"}`, `"1843-09-01"`},
		{`{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"}},"required":["x","y"]}`, `{"x": 1.5, "y": -2}`},
		{`{"anyOf":[{"type":"string"},{"type":"null"}]}`, `null`},
		{`{"type":"string","maxLength":40}`, `"a short note, with punctuation!"`},
	}
	var props, req, vals []string
	for i := range 20 {
		k := kinds[i%len(kinds)]
		props = append(props, fmt.Sprintf(`"field_%d":%s`, i, k.schema))
		req = append(req, fmt.Sprintf(`"field_%d"`, i))
		vals = append(vals, fmt.Sprintf(`  "field_%d": %s`, i, k.value))
	}
	schema = `{"type":"object","properties":{` + strings.Join(props, ",") + `},"required":[` + strings.Join(req, ",") + `],"additionalProperties":false}`
	return schema, "{\n" + strings.Join(vals, ",\n") + "\n}"
}

// benchSetup compiles the bench schema for the llama-bpe vocabulary and
// tokenizes its document.
func benchSetup(b *testing.B) (*Grammar, *Vocab, []int32) {
	tok, v := realVocab(b, "ggml-vocab-llama-bpe.gguf")
	schema, doc := benchSchema()
	g, err := CompileSchema([]byte(schema), SchemaOptions{Strict: true})
	if err != nil {
		b.Fatal(err)
	}
	ids, err := tok.Encode(doc, false, false)
	if err != nil {
		b.Fatal(err)
	}
	return g, v, ids
}

// runDoc steps a fresh matcher through ids, a mask per step; it returns
// the time spent in Allowed.
func runDoc(b *testing.B, e *Engine, ids []int32, mask []uint64) time.Duration {
	m, err := e.NewMatcher()
	if err != nil {
		b.Fatal(err)
	}
	var in time.Duration
	for _, id := range ids {
		t0 := time.Now()
		if err := m.Allowed(mask); err != nil {
			b.Fatal(err)
		}
		in += time.Since(t0)
		if err := m.Accept(id); err != nil {
			b.Fatal(err)
		}
	}
	return in
}

// BenchmarkMask reports the cost of one step's mask (Allowed) on the
// 128256-token llama-bpe vocabulary for a 20-property JSON schema:
// warm (every state seen before), cold states (position tables built,
// the per-state cache empty) and first use (a new engine: tables built
// as the document needs them).
func BenchmarkMask(b *testing.B) {
	g, v, ids := benchSetup(b)
	mask := make([]uint64, v.MaskWords())
	report := func(b *testing.B, spent time.Duration) {
		b.ReportMetric(float64(spent.Microseconds())/float64(b.N*len(ids)), "µs/step")
		b.ReportMetric(0, "ns/op")
	}
	b.Run("warm", func(b *testing.B) {
		e, _ := NewEngine(g, v)
		runDoc(b, e, ids, mask)
		var spent time.Duration
		for b.Loop() {
			spent += runDoc(b, e, ids, mask)
		}
		report(b, spent)
	})
	b.Run("cold-states", func(b *testing.B) {
		e, _ := NewEngine(g, v)
		runDoc(b, e, ids, mask)
		var spent time.Duration
		for b.Loop() {
			e.cmu.Lock()
			clear(e.masks)
			e.cmu.Unlock()
			spent += runDoc(b, e, ids, mask)
		}
		report(b, spent)
	})
	b.Run("first-use", func(b *testing.B) {
		var spent time.Duration
		for b.Loop() {
			e, _ := NewEngine(g, v)
			spent += runDoc(b, e, ids, mask)
		}
		report(b, spent)
		b.ReportMetric(float64(spent.Microseconds())/float64(b.N)/1000, "ms/document")
		b.ReportMetric(float64(len(ids)), "steps/document")
	})
}

// BenchmarkAccept reports the cost of advancing by one token.
func BenchmarkAccept(b *testing.B) {
	g, v, ids := benchSetup(b)
	e, _ := NewEngine(g, v)
	var spent time.Duration
	for b.Loop() {
		m, _ := e.NewMatcher()
		t0 := time.Now()
		for _, id := range ids {
			if err := m.Accept(id); err != nil {
				b.Fatal(err)
			}
		}
		spent += time.Since(t0)
	}
	b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N*len(ids))/1000, "µs/step")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkCompileSchema reports translating and compiling the
// 20-property schema.
func BenchmarkCompileSchema(b *testing.B) {
	schema, _ := benchSchema()
	b.Run("compile", func(b *testing.B) {
		for b.Loop() {
			if _, err := CompileSchema([]byte(schema), SchemaOptions{Strict: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
