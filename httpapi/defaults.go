package httpapi

// GenDefaults are the generation parameters of requests that leave them
// out, as llama-server's -n, --temp, --top-k, --top-p and -s set them. The
// zero value keeps llama.cpp's defaults.
type GenDefaults struct {
	MaxTokens   int      // max_tokens when neither it nor max_completion_tokens is set; 0: until the context is full
	Temperature *float32 // nil: 0.8
	TopK        *int     // nil: 40
	TopP        *float32 // nil: 0.95
	Seed        *int64   // nil: a random seed per request
}

// preset writes the defaults into a body about to be decoded, each into a
// value of its own (decoding writes through the pointers), so that the
// fields the body sets replace them.
func (g *genParams) preset(d GenDefaults) {
	g.defaultMax = d.MaxTokens
	g.Temperature = clone(d.Temperature)
	g.TopK = clone(d.TopK)
	g.TopP = clone(d.TopP)
	g.Seed = clone(d.Seed)
}

// clone returns a pointer to a copy of *p, or nil.
func clone[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
