package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"time"

	"llmserve/decode"
	"llmserve/gguf"
	"llmserve/grammar"
	"llmserve/model/tokenizer"
)

// maxBenchGrammarBytes bounds a --json-schema or --grammar file.
const maxBenchGrammarBytes = 1 << 20

// benchGrammar is the compiled constraint of a constrained bench run: the
// same engine the server builds for a request's grammar or json_schema.
type benchGrammar struct {
	kind    string // "json_schema" (documents must parse as JSON) or "grammar"
	path    string // the file it came from
	eng     *grammar.Engine
	g       *grammar.Grammar // what eng was built from
	v       *grammar.Vocab   // the model's tokens as the matchers see them
	cold    bool             // each run gets a new engine: no mask cached before it
	tok     *tokenizer.Tokenizer
	vocab   int           // tokens of the model
	rules   int           // rules of the compiled grammar
	compile time.Duration // GBNF (from the schema) to a ready engine
}

// loadBenchGrammar reads a JSON schema (kind "json_schema") or a GBNF
// grammar (kind "grammar") and compiles it for the model's vocabulary.
func loadBenchGrammar(f *gguf.File, kind, path string) (*benchGrammar, error) {
	src, err := readBounded(path, maxBenchGrammarBytes)
	if err != nil {
		return nil, err
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return nil, fmt.Errorf("bench: tokenizer: %w", err)
	}
	v, err := grammar.VocabOf(tok)
	if err != nil {
		return nil, fmt.Errorf("bench: grammar vocabulary: %w", err)
	}
	start := time.Now()
	gbnf := string(src)
	if kind == "json_schema" {
		if gbnf, err = grammar.SchemaGBNF(src, grammar.SchemaOptions{}); err != nil {
			return nil, fmt.Errorf("bench: --json-schema %s: %w", path, err)
		}
	}
	g, err := grammar.Parse(gbnf)
	if err != nil {
		return nil, fmt.Errorf("bench: --%s %s: %w", flagName(kind), path, err)
	}
	eng, err := grammar.NewEngine(g, v)
	if err != nil {
		return nil, fmt.Errorf("bench: --%s %s: %w", flagName(kind), path, err)
	}
	bg := &benchGrammar{kind: kind, path: path, eng: eng, g: g, v: v, tok: tok, vocab: tok.VocabSize(), rules: g.Rules(), compile: time.Since(start)}
	return bg, nil
}

// forRun is the grammar a run uses: g itself, or a copy with an engine of
// its own when every run starts cold.
func (g *benchGrammar) forRun() (*benchGrammar, error) {
	if !g.cold {
		return g, nil
	}
	eng, err := grammar.NewEngine(g.g, g.v)
	if err != nil {
		return nil, fmt.Errorf("bench: grammar: %w", err)
	}
	c := *g
	c.eng = eng
	return &c, nil
}

// flagName is the command-line flag of a constraint kind.
func flagName(kind string) string {
	if kind == "json_schema" {
		return "json-schema"
	}
	return kind
}

// readBounded reads a file of at most limit bytes.
func readBounded(path string, limit int64) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, limit+1))
	if err != nil {
		return nil, fmt.Errorf("bench: %s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("bench: %s is larger than %d bytes", path, limit)
	}
	return b, nil
}

// constrainedRows is how many of B sequences a share constrains: at least
// one when the share is above 0.
func constrainedRows(share float64, B int) int {
	if share <= 0 {
		return 0
	}
	return min(B, max(1, int(math.Round(share*float64(B)))))
}

// countedMatcher is a sequence's grammar matcher that counts what its
// masks banned and checks its documents: when a document ends (the end
// token), its text must parse (JSON schemas) and a fresh matcher starts
// the next one, so that a sequence stays constrained for the whole run.
type countedMatcher struct {
	g    *benchGrammar
	m    *grammar.Matcher
	text []byte // the current document's bytes so far

	masks    int           // masks computed
	banned   int64         // tokens those masks banned, summed
	maskTime time.Duration // spent in Allowed
	docs     int           // documents ended
	invalid  int           // of them, those that did not parse
	example  string        // the first ended document, or the longest prefix so far
}

func newCountedMatcher(g *benchGrammar) (*countedMatcher, error) {
	m, err := g.eng.NewMatcher()
	if err != nil {
		return nil, fmt.Errorf("bench: grammar: %w", err)
	}
	return &countedMatcher{g: g, m: m}, nil
}

// Allowed implements decode.Constraint.
func (c *countedMatcher) Allowed(mask []uint64) error {
	start := time.Now()
	err := c.m.Allowed(mask)
	c.maskTime += time.Since(start)
	if err != nil {
		return err
	}
	allowed := 0
	for _, w := range mask {
		allowed += bits.OnesCount64(w)
	}
	c.masks++
	c.banned += int64(c.g.vocab - allowed)
	return nil
}

// Accept implements decode.Constraint. An end token the matcher accepts
// ends the document.
func (c *countedMatcher) Accept(tok int32) error {
	if err := c.m.Accept(tok); err != nil {
		return err
	}
	if !c.g.tok.IsEOG(tok) {
		if !c.g.tok.IsControl(tok) {
			c.text = append(c.text, c.g.tok.TokenBytes(tok)...)
		}
		if c.docs == 0 {
			c.example = string(c.text)
		}
		return nil
	}
	c.docs++
	if c.g.kind == "json_schema" && !json.Valid(c.text) {
		c.invalid++
	}
	if c.docs == 1 {
		c.example = string(c.text)
	}
	c.text = c.text[:0]
	m, err := c.g.eng.NewMatcher()
	if err != nil {
		return fmt.Errorf("bench: grammar: %w", err)
	}
	c.m = m
	return nil
}

// Done implements decode.Constraint.
func (c *countedMatcher) Done() bool { return c.m.Done() }

// constraintStats sums the matchers of one run.
type constraintStats struct {
	rows     int // constrained sequences
	masks    int
	banned   int64
	maskTime time.Duration
	docs     int
	invalid  int
	example  string
	picks    int // constrained picks of the run
	onDevice int // of them, those the engine made with their masks
}

func sumMatchers(ms []*countedMatcher) constraintStats {
	st := constraintStats{rows: len(ms)}
	for _, m := range ms {
		st.masks += m.masks
		st.banned += m.banned
		st.maskTime += m.maskTime
		st.docs += m.docs
		st.invalid += m.invalid
		if len(m.example) > len(st.example) && (st.docs == 0 || m.docs > 0) {
			st.example = m.example
		}
	}
	return st
}

// benchSamplers makes greedy samplers for B sequences, the first k of
// them constrained by g.
func benchSamplers(g *benchGrammar, B, k, vocab int) ([]*decode.Sampler, []*countedMatcher, error) {
	if k > 0 {
		var err error
		if g, err = g.forRun(); err != nil {
			return nil, nil, err
		}
	}
	samplers := make([]*decode.Sampler, B)
	var ms []*countedMatcher
	for s := range samplers {
		var p decode.SamplerParams
		if s < k {
			m, err := newCountedMatcher(g)
			if err != nil {
				return nil, nil, err
			}
			ms = append(ms, m)
			p.Constraint = m
		}
		var err error
		if samplers[s], err = decode.NewSampler(p, vocab); err != nil {
			return nil, nil, err
		}
	}
	return samplers, ms, nil
}

// checkConstrained fails a run whose constrained sequences were not held
// to the grammar: no mask banned anything, or a document did not parse.
func checkConstrained(st constraintStats) error {
	switch {
	case st.rows == 0:
		return nil
	case st.masks == 0 || st.banned == 0:
		return errors.New("bench: the constrained sequences computed no mask that banned a token")
	case st.invalid > 0:
		return fmt.Errorf("bench: %d of %d constrained documents do not parse as JSON (first: %.300q)", st.invalid, st.docs, st.example)
	}
	return nil
}

// printConstrained prints a constrained run beside its unconstrained one:
// "ctgN B=b c=k" lines, which scripts tell from the "tgN B=b" ones.
func printConstrained(w io.Writer, r, free benchResult, st constraintStats, vocab int) {
	tps := func(x benchResult) float64 { return float64(x.gen*x.batch) / x.decode.Seconds() }
	ratio := 100 * tps(r) / tps(free)
	var perMask time.Duration
	var banned float64
	if st.masks > 0 {
		perMask = st.maskTime / time.Duration(st.masks)
		banned = float64(st.banned) / float64(st.masks)
	}
	fmt.Fprintf(w, "ctg%d B=%-3d c=%-3d %9.1f tok/s  (%.1f%% of unconstrained; %s; mask %v per constrained token, %.0f of %d tokens banned on average; %d documents ended, %d invalid)\n",
		r.gen, r.batch, st.rows, tps(r), ratio, pickedWhere(st), perMask.Round(100*time.Nanosecond), banned, vocab, st.docs, st.invalid)
}

// pickedWhere says where a run's constrained rows were picked.
func pickedWhere(st constraintStats) string {
	switch {
	case st.onDevice == 0:
		return "picked on the host"
	case st.onDevice == st.picks:
		return "picked on the device with their masks"
	}
	return fmt.Sprintf("%d of %d picked on the device with their masks, the rest on the host", st.onDevice, st.picks)
}
