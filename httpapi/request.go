package httpapi

import (
	"encoding/json"
	"net/http"
)

// genParams are the generation parameters shared by /v1/completions and
// /v1/chat/completions: OpenAI's names, and llama.cpp server's where they
// mean the same. Pointers and raw values tell an absent field from a zero
// one. Unknown fields are ignored; fields this server knows but cannot
// honour are refused by unsupported (unsupported.go).
type genParams struct {
	Model               string          `json:"model"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	NPredict            *int            `json:"n_predict"`
	Temperature         *float32        `json:"temperature"`
	TopP                *float32        `json:"top_p"`
	TopK                *int            `json:"top_k"`
	MinP                *float32        `json:"min_p"`
	TypicalP            *float32        `json:"typical_p"`
	PresencePenalty     *float32        `json:"presence_penalty"`
	FrequencyPenalty    *float32        `json:"frequency_penalty"`
	RepeatPenalty       *float32        `json:"repeat_penalty"`
	RepeatLastN         *int            `json:"repeat_last_n"`
	Seed                *int64          `json:"seed"`
	Stop                json.RawMessage `json:"stop"`
	LogitBias           json.RawMessage `json:"logit_bias"`
	Logprobs            json.RawMessage `json:"logprobs"`
	TopLogprobs         *int            `json:"top_logprobs"`
	NProbs              *int            `json:"n_probs"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	N         *int `json:"n"`
	IgnoreEOS bool `json:"ignore_eos"`

	// llama.cpp's further samplers (sampling.go).
	Mirostat            *int            `json:"mirostat"`
	MirostatTau         *float32        `json:"mirostat_tau"`
	MirostatEta         *float32        `json:"mirostat_eta"`
	DRYMultiplier       *float32        `json:"dry_multiplier"`
	DRYBase             *float32        `json:"dry_base"`
	DRYAllowedLength    *int            `json:"dry_allowed_length"`
	DRYPenaltyLastN     *int            `json:"dry_penalty_last_n"`
	DRYSequenceBreakers json.RawMessage `json:"dry_sequence_breakers"`
	XTCProbability      *float32        `json:"xtc_probability"`
	XTCThreshold        *float32        `json:"xtc_threshold"`
	TopNSigma           *float32        `json:"top_n_sigma"`
	Samplers            json.RawMessage `json:"samplers"`

	// cache_prompt: false takes nothing from the prefix cache (the output
	// is the same either way).
	CachePrompt *bool `json:"cache_prompt"`

	// Structured output (structured.go): at most one constrains the output.
	Grammar        json.RawMessage `json:"grammar"`
	JSONSchema     json.RawMessage `json:"json_schema"`
	ResponseFormat json.RawMessage `json:"response_format"`

	// Tool calling, on /v1/chat/completions (tools.go).
	Tools             json.RawMessage `json:"tools"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`

	// Refused unless neutral (unsupported.go).
	Functions json.RawMessage `json:"functions"`

	defaultMax int // the server's max_tokens for requests that send none (-n); 0: the context
}

// includeUsage reports whether a stream should end with a usage chunk.
func (g *genParams) includeUsage() bool {
	return g.StreamOptions != nil && g.StreamOptions.IncludeUsage
}

// choices is the number of choices asked per prompt (the request has been
// validated: n is absent or within bounds).
func (g *genParams) choices() int {
	if g.N == nil {
		return 1
	}
	return *g.N
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

// checkModel refuses a request for a model other than the served one; an
// empty name means the served one.
func checkModel(name, served string) error {
	if name != "" && name != served {
		return unknownModel{name: name, served: served}
	}
	return nil
}
