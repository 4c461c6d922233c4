package httpapi

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strconv"

	"llmserve/decode"
)

// Defaults follow llama.cpp's server.
const (
	defaultTemperature      = 0.8
	defaultTopK             = 40
	defaultTopP             = 0.95
	defaultMinP             = 0.05
	defaultRepeatLastN      = 64
	defaultMirostatTau      = 5
	defaultMirostatEta      = 0.1
	defaultDRYBase          = 1.75
	defaultDRYAllowedLength = 2
	defaultDRYPenaltyLastN  = -1
	defaultXTCThreshold     = 0.1
)

// defaultBreakers are llama.cpp's DRY sequence breakers.
func defaultBreakers() []string { return []string{"\n", ":", "\"", "*"} }

// request translates the parameters into a scheduler request without a
// prompt, checking every value against lim.
func (g *genParams) request(lim limits) (decode.Request, error) {
	var r decode.Request
	if g.StreamOptions != nil && !g.Stream {
		return r, invalid("stream_options", "stream_options is only allowed when stream is true")
	}
	if err := g.unsupported(); err != nil {
		return r, err
	}
	if g.N != nil && (*g.N < 1 || *g.N > lim.capacity) {
		return r, invalid("n", "n must be between 1 and %d, the requests this server can hold at once (got %d)", lim.capacity, *g.N)
	}
	maxTokens, err := g.maxTokens(lim.ctx)
	if err != nil {
		return r, err
	}
	p, err := g.sampling(lim)
	if err != nil {
		return r, err
	}
	stop, err := parseStop(g.Stop)
	if err != nil {
		return r, err
	}
	r.MaxTokens, r.Sampling, r.Stop, r.IgnoreEOS = maxTokens, p, stop, g.IgnoreEOS
	r.NoPromptCache = g.CachePrompt != nil && !*g.CachePrompt // cache_prompt: false computes the whole prompt
	return r, nil
}

// maxTokens reads the generation limit from whichever of
// max_completion_tokens, max_tokens and n_predict was sent (in that order
// of precedence); 0 means until the context is full.
func (g *genParams) maxTokens(ctx int) (int, error) {
	var (
		name string
		v    *int
	)
	switch {
	case g.MaxCompletionTokens != nil:
		name, v = "max_completion_tokens", g.MaxCompletionTokens
	case g.MaxTokens != nil:
		name, v = "max_tokens", g.MaxTokens
	case g.NPredict != nil:
		name, v = "n_predict", g.NPredict
		if *v == -1 {
			return 0, nil // llama.cpp: until the context is full
		}
	case g.defaultMax > 0:
		return min(g.defaultMax, ctx), nil
	default:
		return 0, nil
	}
	if *v < 1 || *v > maxGenerated {
		return 0, invalid(name, "%s must be between 1 and %d (got %d)", name, maxGenerated, *v)
	}
	// More than the context allows is not an error, as in llama-server:
	// generation ends when the context is full (finish_reason "length").
	return min(*v, ctx), nil
}

// maxGenerated bounds max_tokens and its aliases; clients send large
// defaults (a model's whole context) that the context then cuts short.
const maxGenerated = 1 << 30

// sampling builds the sampler parameters: llama.cpp's defaults, then every
// field the request sent, each checked.
func (g *genParams) sampling(lim limits) (decode.SamplerParams, error) {
	p := decode.SamplerParams{
		Temperature:         defaultTemperature,
		TopK:                defaultTopK,
		TopP:                defaultTopP,
		MinP:                defaultMinP,
		RepeatPenalty:       1,
		PenaltyLastN:        defaultRepeatLastN,
		TypicalP:            1,
		TopNSigma:           -1,
		XTCThreshold:        defaultXTCThreshold,
		MirostatTau:         defaultMirostatTau,
		MirostatEta:         defaultMirostatEta,
		DRYBase:             defaultDRYBase,
		DRYAllowedLength:    defaultDRYAllowedLength,
		DRYPenaltyLastN:     defaultDRYPenaltyLastN,
		DRYSequenceBreakers: defaultBreakers(),
	}
	if err := setFloats([]floatParam{
		{&p.Temperature, g.Temperature, "temperature", 0, 100},
		{&p.TopP, g.TopP, "top_p", 0, 1},
		{&p.MinP, g.MinP, "min_p", 0, 1},
		{&p.TypicalP, g.TypicalP, "typical_p", 0, 1},
		{&p.PresencePenalty, g.PresencePenalty, "presence_penalty", -2, 2},
		{&p.FrequencyPenalty, g.FrequencyPenalty, "frequency_penalty", -2, 2},
		{&p.RepeatPenalty, g.RepeatPenalty, "repeat_penalty", 0, 100},
		{&p.MirostatTau, g.MirostatTau, "mirostat_tau", 0, 100},
		{&p.MirostatEta, g.MirostatEta, "mirostat_eta", 0, 1},
		{&p.DRYMultiplier, g.DRYMultiplier, "dry_multiplier", 0, 100},
		{&p.DRYBase, g.DRYBase, "dry_base", 1, 100},
		{&p.XTCProbability, g.XTCProbability, "xtc_probability", 0, 1},
		{&p.XTCThreshold, g.XTCThreshold, "xtc_threshold", 0, 1},
		{&p.TopNSigma, g.TopNSigma, "top_n_sigma", -1, 100},
	}); err != nil {
		return p, err
	}
	if err := setInts([]intParam{
		{&p.TopK, g.TopK, "top_k", 0, lim.vocab},
		{&p.PenaltyLastN, g.RepeatLastN, "repeat_last_n", -1, lim.ctx},
		{&p.Mirostat, g.Mirostat, "mirostat", 0, 2},
		{&p.DRYAllowedLength, g.DRYAllowedLength, "dry_allowed_length", 0, lim.ctx},
		{&p.DRYPenaltyLastN, g.DRYPenaltyLastN, "dry_penalty_last_n", -1, lim.ctx},
	}); err != nil {
		return p, err
	}
	if p.PenaltyLastN == -1 {
		p.PenaltyLastN = lim.ctx // llama.cpp: the whole context
	}
	if p.DRYPenaltyLastN == 0 {
		p.DRYMultiplier = 0 // llama.cpp: a window of 0 turns DRY off
	}
	if g.TopP != nil && *g.TopP == 0 {
		// Nothing but the most likely token reaches a mass of 0; the
		// samplers (host and device) read that as top-k 1.
		p.TopK, p.TopP = 1, 1
	}
	if g.Seed == nil || *g.Seed == -1 {
		p.Seed = rand.Uint64() // llama.cpp: -1 is a random seed
	} else {
		p.Seed = uint64(*g.Seed)
	}
	var err error
	if p.LogitBias, err = parseLogitBias(g.LogitBias, lim.vocab); err != nil {
		return p, err
	}
	if err := g.logprobs(lim.chat, &p); err != nil {
		return p, err
	}
	if raw := g.DRYSequenceBreakers; present(raw) {
		if p.DRYSequenceBreakers, err = stringList(raw, "dry_sequence_breakers", maxBreakers, maxBreakerBytes); err != nil {
			return p, err
		}
	}
	if p.Samplers, err = parseSamplers(g.Samplers); err != nil {
		return p, err
	}
	return p, nil
}

// logprobs reads "logprobs" (an integer count for completions, a boolean
// for chat), "top_logprobs", and llama.cpp's "n_probs".
func (g *genParams) logprobs(chat bool, p *decode.SamplerParams) error {
	raw := bytes.TrimSpace(g.Logprobs)
	switch {
	case !present(raw) || bytes.Equal(raw, []byte("false")):
	case bytes.Equal(raw, []byte("true")):
		p.Logprobs = true
	default:
		n, err := strconv.Atoi(string(raw))
		if err != nil || chat {
			return invalid("logprobs", "logprobs must be %s, not %s", map[bool]string{true: "a boolean", false: "an integer"}[chat], raw)
		}
		if n < 0 || n > decode.MaxTopLogprobs {
			return invalid("logprobs", "logprobs must be between 0 and %d (got %d)", decode.MaxTopLogprobs, n)
		}
		p.Logprobs, p.TopLogprobs = true, n
	}
	if g.TopLogprobs != nil {
		n := *g.TopLogprobs
		if n < 0 || n > decode.MaxTopLogprobs {
			return invalid("top_logprobs", "top_logprobs must be between 0 and %d (got %d)", decode.MaxTopLogprobs, n)
		}
		if n > 0 && !p.Logprobs {
			return invalid("top_logprobs", "top_logprobs needs logprobs set")
		}
		p.TopLogprobs = n
	}
	if g.NProbs != nil {
		n := *g.NProbs
		if n < 0 || n > decode.MaxTopLogprobs {
			return invalid("n_probs", "n_probs must be between 0 and %d (got %d)", decode.MaxTopLogprobs, n)
		}
		if n > 0 {
			p.Logprobs, p.TopLogprobs = true, n
		}
	}
	return nil
}

// parseStop reads "stop": a string or an array of strings, bounded in
// count and total bytes. Empty strings stop nothing and are dropped.
func parseStop(raw json.RawMessage) ([]string, error) {
	if !present(raw) {
		return nil, nil
	}
	if !jsonTextValid(raw) {
		return nil, invalid("stop", "stop is not valid UTF-8")
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if len(one) > maxStopBytes {
			return nil, invalid("stop", "stop is %d bytes; at most %d are allowed", len(one), maxStopBytes)
		}
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	list, err := stringList(raw, "stop", maxStops, maxStopBytes)
	if err != nil {
		return nil, err
	}
	kept := list[:0]
	for _, s := range list {
		if s != "" {
			kept = append(kept, s)
		}
	}
	return kept, nil
}

// stringList reads an array of at most maxN strings of at most maxBytes in
// all; name is the parameter in errors.
func stringList(raw json.RawMessage, name string, maxN, maxBytes int) ([]string, error) {
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, invalid(name, "%s must be an array of strings", name)
	}
	if len(elems) > maxN {
		return nil, invalid(name, "%s has %d entries; at most %d are allowed", name, len(elems), maxN)
	}
	out := make([]string, len(elems))
	total := 0
	for i, e := range elems {
		if !jsonTextValid(e) {
			return nil, invalid(elemName(name, i), "%s is not valid UTF-8", elemName(name, i))
		}
		if err := json.Unmarshal(e, &out[i]); err != nil {
			return nil, invalid(elemName(name, i), "%s must be a string", elemName(name, i))
		}
		if total += len(out[i]); total > maxBytes {
			return nil, invalid(name, "%s holds more than %d bytes in all", name, maxBytes)
		}
	}
	return out, nil
}

// elemName names element i of an array parameter: "stop[2]".
func elemName(name string, i int) string { return name + "[" + strconv.Itoa(i) + "]" }

// present reports whether a raw field was sent with a value other than null.
func present(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}
