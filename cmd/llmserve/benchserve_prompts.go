package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"
)

// benchWords are common English words: most vocabularies hold each as one
// or two tokens, so a prompt's token count follows its word count closely.
var benchWords = strings.Fields(`the of and to in is was it for on with he she they that at by this had not
are but from or have an which one you were her all there would their we him been has when who will
more no if out so said what up its about into than them can only other new some could time these two
may then do first any my now such like our over man me even most made after also did many before must
through back years where much your way well down should because each just those people how too little
state good very make world still own see men work long get here between both life being under never
day same another know while last might us great old year off come since against go came right used
take three small house water room mother night place story cat dog tree garden happy friend play ball`)

// defaultTokensPerWord is the estimate used when the server has no /tokenize.
const defaultTokensPerWord = 1.3

// randomWords returns n words drawn with seed.
func randomWords(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(benchWords[r.IntN(len(benchWords))])
	}
	return b.String()
}

// countTokens asks the server's POST /tokenize (llmserve and llama-server
// have it) how many tokens text has, without special tokens.
func countTokens(ctx context.Context, hc *http.Client, o *benchServeOptions, text string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	body, err := json.Marshal(map[string]any{"content": text, "add_special": false})
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.url+"/tokenize", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	authorize(req, o.apiKey)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("POST /tokenize: %s", resp.Status)
	}
	var out struct {
		Tokens []json.RawMessage `json:"tokens"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&out); err != nil {
		return 0, fmt.Errorf("POST /tokenize: %w", err)
	}
	return len(out.Tokens), nil
}

// tokensPerWord measures the server's tokens per word of benchWords, or
// falls back to an estimate when it cannot tokenize.
func tokensPerWord(ctx context.Context, hc *http.Client, o *benchServeOptions) (float64, bool) {
	const sample = 500
	n, err := countTokens(ctx, hc, o, randomWords(o.seed^0x5eed, sample))
	if err != nil || n == 0 {
		return defaultTokensPerWord, false
	}
	return float64(n) / sample, true
}

// promptSet is the prompts of a run, one per request, and how their
// lengths were chosen.
type promptSet struct {
	prompts       []string
	tokensPerWord float64 // of benchWords
	measured      bool    // tokensPerWord came from the server's /tokenize
}

// buildPrompts makes one prompt per request: a shared prefix of about
// prefixTokens tokens, then distinct words up to about promptTokens.
func buildPrompts(ctx context.Context, hc *http.Client, o *benchServeOptions) (*promptSet, error) {
	ratio, measured := tokensPerWord(ctx, hc, o)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	ps := &promptSet{prompts: make([]string, o.clients*o.requests), tokensPerWord: ratio, measured: measured}
	ps.fill(o)
	// One correction from the first whole prompt's count, for what the
	// sample's ratio missed (word boundaries, the start of the text).
	if measured {
		if n, err := countTokens(ctx, hc, o, ps.prompts[0]); err == nil && n > 0 && n != o.promptTokens {
			ps.tokensPerWord *= float64(n) / float64(o.promptTokens)
			ps.fill(o)
		}
	}
	return ps, nil
}

// fill writes the prompts for the current tokensPerWord.
func (ps *promptSet) fill(o *benchServeOptions) {
	words := func(tokens int) int {
		if tokens <= 0 {
			return 0
		}
		return max(1, int(float64(tokens)/ps.tokensPerWord+0.5))
	}
	prefix := randomWords(o.seed, words(o.prefixTokens))
	rest := words(o.promptTokens - o.prefixTokens)
	for i := range ps.prompts {
		p := randomWords(o.seed+uint64(i)+1, rest)
		if prefix != "" {
			p = prefix + " " + p
		}
		ps.prompts[i] = p
	}
}
