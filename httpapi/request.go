package httpapi

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"strconv"

	"llmserve/decode"
)

// genParams are the generation parameters shared by /v1/completions and
// /v1/chat/completions. Pointers tell an absent field from a zero one.
type genParams struct {
	Model               string             `json:"model"`
	MaxTokens           *int               `json:"max_tokens"`
	MaxCompletionTokens *int               `json:"max_completion_tokens"`
	Temperature         *float32           `json:"temperature"`
	TopP                *float32           `json:"top_p"`
	TopK                *int               `json:"top_k"`
	MinP                *float32           `json:"min_p"`
	PresencePenalty     *float32           `json:"presence_penalty"`
	FrequencyPenalty    *float32           `json:"frequency_penalty"`
	RepeatPenalty       *float32           `json:"repeat_penalty"`
	RepeatLastN         *int               `json:"repeat_last_n"`
	Seed                *int64             `json:"seed"`
	Stop                json.RawMessage    `json:"stop"`
	LogitBias           map[string]float32 `json:"logit_bias"`
	Logprobs            json.RawMessage    `json:"logprobs"`
	TopLogprobs         *int               `json:"top_logprobs"`
	Stream              bool               `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	N         *int `json:"n"`
	IgnoreEOS bool `json:"ignore_eos"`
}

// Defaults follow llama.cpp's server.
const (
	defaultTemperature = 0.8
	defaultTopK        = 40
	defaultTopP        = 0.95
	defaultMinP        = 0.05
	defaultRepeatLastN = 64
)

// includeUsage reports whether a stream should end with a usage chunk.
func (g *genParams) includeUsage() bool {
	return g.StreamOptions != nil && g.StreamOptions.IncludeUsage
}

// modelNamer is a generation request body: it names the model it wants
// and takes the server's defaults before it is decoded (defaults.go).
type modelNamer interface {
	modelName() string
	preset(d GenDefaults)
}

func (g *genParams) modelName() string { return g.Model }

// parseGen is the start of every generation handler: the loaded model, the
// decoded body, and a check that the body asks for that model.
func (s *Server) parseGen(r *http.Request, body modelNamer) (*Model, error) {
	m, err := s.loaded()
	if err != nil {
		return nil, err
	}
	body.preset(s.cfg.Defaults) // what the body sets replaces them
	if err := decodeBody(r, body); err != nil {
		return nil, err
	}
	if err := checkModel(body.modelName(), m.Name); err != nil {
		return nil, err
	}
	return m, nil
}

// decodeBody reads the JSON body into v, refusing trailing data.
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return invalid("", "the request body holds more than one JSON value")
	}
	return nil
}

// request translates the parameters into a scheduler request without a
// prompt. chat selects the chat form of logprobs (a boolean).
func (g *genParams) request(chat bool) (decode.Request, error) {
	var r decode.Request
	if g.N != nil && *g.N != 1 {
		return r, invalid("n", "n must be 1 (got %d): this server generates one choice per prompt", *g.N)
	}
	maxTokens := g.MaxTokens
	if g.MaxCompletionTokens != nil {
		maxTokens = g.MaxCompletionTokens
	}
	if maxTokens != nil {
		if *maxTokens <= 0 {
			return r, invalid("max_tokens", "max_tokens must be at least 1 (got %d)", *maxTokens)
		}
		r.MaxTokens = *maxTokens
	}
	p := decode.SamplerParams{
		Temperature:   defaultTemperature,
		TopK:          defaultTopK,
		TopP:          defaultTopP,
		MinP:          defaultMinP,
		RepeatPenalty: 1,
		PenaltyLastN:  defaultRepeatLastN,
	}
	setFloat := func(dst *float32, v *float32, name string, lo, hi float32) error {
		if v == nil {
			return nil
		}
		if *v < lo || *v > hi {
			return invalid(name, "%s must be between %g and %g (got %g)", name, lo, hi, *v)
		}
		*dst = *v
		return nil
	}
	for _, f := range []struct {
		dst    *float32
		v      *float32
		name   string
		lo, hi float32
	}{
		{&p.Temperature, g.Temperature, "temperature", 0, 100},
		{&p.TopP, g.TopP, "top_p", 0, 1},
		{&p.MinP, g.MinP, "min_p", 0, 1},
		{&p.PresencePenalty, g.PresencePenalty, "presence_penalty", -2, 2},
		{&p.FrequencyPenalty, g.FrequencyPenalty, "frequency_penalty", -2, 2},
		{&p.RepeatPenalty, g.RepeatPenalty, "repeat_penalty", 0, 100},
	} {
		if err := setFloat(f.dst, f.v, f.name, f.lo, f.hi); err != nil {
			return r, err
		}
	}
	if g.TopK != nil {
		if *g.TopK < 0 {
			return r, invalid("top_k", "top_k must not be negative (got %d)", *g.TopK)
		}
		p.TopK = *g.TopK
	}
	if g.RepeatLastN != nil {
		p.PenaltyLastN = *g.RepeatLastN
	}
	if g.Seed != nil {
		p.Seed = uint64(*g.Seed)
	} else {
		p.Seed = rand.Uint64()
	}
	if len(g.LogitBias) > 0 {
		p.LogitBias = make(map[int32]float32, len(g.LogitBias))
		for k, v := range g.LogitBias {
			id, err := strconv.ParseInt(k, 10, 32)
			if err != nil {
				return r, invalid("logit_bias", "logit_bias keys must be token ids, not %q", k)
			}
			p.LogitBias[int32(id)] = v
		}
	}
	if err := g.logprobs(chat, &p); err != nil {
		return r, err
	}
	stop, err := parseStop(g.Stop)
	if err != nil {
		return r, err
	}
	r.Sampling, r.Stop, r.IgnoreEOS = p, stop, g.IgnoreEOS
	return r, nil
}

// logprobs reads "logprobs" (an integer count for completions, a boolean
// for chat) and "top_logprobs".
func (g *genParams) logprobs(chat bool, p *decode.SamplerParams) error {
	raw := bytes.TrimSpace(g.Logprobs)
	switch {
	case len(raw) == 0 || bytes.Equal(raw, []byte("null")) || bytes.Equal(raw, []byte("false")):
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
	return nil
}

// parseStop reads "stop": a string or an array of strings.
func parseStop(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		return []string{one}, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, invalid("stop", "stop must be a string or an array of strings")
	}
	return list, nil
}

// prompts reads "prompt": a string, an array of strings, an array of token
// ids or an array of arrays of token ids. Text is tokenized with tok.
func parsePrompts(raw json.RawMessage, tok Tokenizer) ([][]int32, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, invalid("prompt", "prompt is required")
	}
	encode := func(s string) ([]int32, error) {
		ids, err := tok.Encode(s, true, true)
		if err != nil {
			return nil, invalid("prompt", "cannot tokenize the prompt: %v", err)
		}
		return ids, nil
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		ids, err := encode(text)
		return [][]int32{ids}, err
	}
	var ids []int32
	if json.Unmarshal(raw, &ids) == nil {
		return [][]int32{ids}, nil
	}
	var texts []string
	if json.Unmarshal(raw, &texts) == nil {
		out := make([][]int32, len(texts))
		for i, s := range texts {
			var err error
			if out[i], err = encode(s); err != nil {
				return nil, err
			}
		}
		return nonEmpty(out)
	}
	var lists [][]int32
	if json.Unmarshal(raw, &lists) == nil {
		return nonEmpty(lists)
	}
	return nil, invalid("prompt", "prompt must be a string, an array of strings, an array of token ids or an array of arrays of token ids")
}

func nonEmpty(p [][]int32) ([][]int32, error) {
	if len(p) == 0 {
		return nil, invalid("prompt", "prompt is an empty array")
	}
	return p, nil
}

// checkModel refuses a request for a model other than the served one; an
// empty name means the served one.
func checkModel(name, served string) error {
	if name != "" && name != served {
		return unknownModel{name: name, served: served}
	}
	return nil
}
