package httpapi

import "math"

// limits are the bounds a request is checked against: what the served
// model and scheduler can ever do.
type limits struct {
	ctx      int  // positions per sequence (prompt plus generated tokens)
	vocab    int  // tokens in the vocabulary
	capacity int  // requests that can be queued or running at once
	chat     bool // the chat endpoint (logprobs is a boolean there)
}

// limitsOf reads the bounds of m.
func limitsOf(m *Model, chat bool) limits {
	return limits{ctx: m.Scheduler.ContextSize(), vocab: m.Tokenizer.VocabSize(), capacity: m.Scheduler.Capacity(), chat: chat}
}

// Bounds on the lists a request carries.
const (
	maxStops         = 16   // stop strings per request
	maxStopBytes     = 4096 // total bytes of the stop strings
	maxBreakers      = 32   // dry_sequence_breakers entries
	maxBreakerBytes  = 1024 // total bytes of dry_sequence_breakers
	maxSamplerStages = 16   // entries of samplers
	maxLogitBiasAbs  = 100  // largest |bias|, as OpenAI's API
)

// floatParam is a float parameter with its inclusive bounds.
type floatParam struct {
	dst    *float32
	v      *float32
	name   string
	lo, hi float32
}

// setFloats copies each present value into its destination after checking
// that it is finite and within bounds.
func setFloats(params []floatParam) error {
	for _, f := range params {
		if f.v == nil {
			continue
		}
		v := *f.v
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return invalid(f.name, "%s must be a finite number", f.name)
		}
		if v < f.lo || v > f.hi {
			return invalid(f.name, "%s must be between %g and %g (got %g)", f.name, f.lo, f.hi, v)
		}
		*f.dst = v
	}
	return nil
}

// intParam is an integer parameter with its inclusive bounds.
type intParam struct {
	dst    *int
	v      *int
	name   string
	lo, hi int
}

// setInts copies each present value into its destination after checking
// its bounds.
func setInts(params []intParam) error {
	for _, f := range params {
		if f.v == nil {
			continue
		}
		if *f.v < f.lo || *f.v > f.hi {
			return invalid(f.name, "%s must be between %d and %d (got %d)", f.name, f.lo, f.hi, *f.v)
		}
		*f.dst = *f.v
	}
	return nil
}

// tooLong is the error for a prompt that cannot fit the context.
func tooLong(param, format string, args ...any) error {
	err := invalid(param, format, args...).(*apiError)
	err.Code = "context_length_exceeded"
	return err
}

// promptFits checks a tokenized prompt against the context and vocabulary;
// param names the prompt in errors.
func promptFits(param string, ids []int32, lim limits) error {
	if len(ids) >= lim.ctx {
		return tooLong(param, "%s has %d tokens but the context holds %d, including at least one generated token", param, len(ids), lim.ctx)
	}
	for i, id := range ids {
		if id < 0 || int(id) >= lim.vocab {
			return invalid(param, "%s: token %d at index %d is outside the vocabulary of %d", param, id, i, lim.vocab)
		}
	}
	return nil
}
