package httpapi

import (
	"context"
	"math"
	"net/http"
	"strings"
	"time"

	"llmserve/decode"
	"llmserve/grammar"
)

// tokenOut is one generated token with its log-probabilities.
type tokenOut struct {
	id      int32
	logprob float32
	top     []decode.TokenLogprob
}

// choice is the whole output of one choice of one prompt.
type choice struct {
	text   strings.Builder
	tokens []tokenOut // only kept when logprobs were asked for
	final  decode.Event
}

// generation is a submitted request on its way to the client.
type generation struct {
	ctx          context.Context // ends the request's scheduler work
	model        *Model
	streams      []*decode.Stream // [prompts * n] choice prompt*n+c of each prompt, in that order
	n            int              // choices per prompt
	sampling     decode.SamplerParams
	includeUsage bool // stream_options.include_usage
}

// submit queues n choices of every prompt and returns their generation;
// the streams are in OpenAI's choice order, index = prompt*n + choice. Its
// context ends the request (client gone, timeout, or the returned cancel).
// With eng every choice follows its own matcher of that grammar.
func (s *Server) submit(w http.ResponseWriter, r *http.Request, m *Model, base decode.Request, prompts [][]int32, n int, includeUsage bool, eng *grammar.Engine) (generation, context.CancelFunc, error) {
	var (
		ctx    context.Context
		cancel context.CancelFunc
	)
	if s.cfg.Timeout > 0 {
		ctx, cancel = context.WithTimeout(r.Context(), s.cfg.Timeout)
	} else {
		ctx, cancel = context.WithCancel(r.Context())
	}
	streams := make([]*decode.Stream, 0, len(prompts)*n)
	st := statsOf(w)
	for i, p := range prompts {
		req := base
		req.Prompt = p
		// Every choice of every prompt draws from its own random stream:
		// SubmitChoices seeds choice j with Seed+j.
		req.Sampling.Seed += uint64(i * n)
		got, err := submitChoices(ctx, m.Scheduler, req, n, eng)
		if err != nil {
			cancel()
			return generation{}, nil, err
		}
		streams = append(streams, got...)
		if st != nil {
			st.promptTokens += len(p)
		}
	}
	return generation{ctx: ctx, model: m, streams: streams, n: n, sampling: base.Sampling, includeUsage: includeUsage}, cancel, nil
}

// addUsage adds the usage of the choice with the given index to u: each
// prompt's tokens count once, however many choices it has.
func (g *generation) addUsage(u *usageJSON, index int, x decode.Usage) {
	if g.n > 1 && index%g.n != 0 {
		x.PromptTokens = 0
	}
	u.add(x)
}

// record notes a batch of events in the request's stats (st may be nil).
func record(st *reqStats, batch []indexed) {
	if st == nil {
		return
	}
	for _, ie := range batch {
		if ie.ev.Done {
			st.completionTokens += ie.ev.Usage.CompletionTokens
			continue
		}
		now := time.Now()
		if st.firstToken.IsZero() {
			st.firstToken = now
		}
		st.lastToken = now
	}
}

// collect waits for every prompt's output.
func collect(ctx context.Context, w http.ResponseWriter, streams []*decode.Stream, keepTokens bool) ([]*choice, error) {
	out := make([]*choice, len(streams))
	for i := range out {
		out[i] = &choice{}
	}
	st := statsOf(w)
	ended := 0
	f := newFeed(ctx, streams)
	for batch := f.next(); batch != nil; batch = f.next() {
		record(st, batch)
		for _, ie := range batch {
			c, ev := out[ie.index], ie.ev
			c.text.WriteString(ev.Text)
			if ev.Done {
				if ev.Err != nil {
					return nil, ev.Err
				}
				c.final = ev
				ended++
				continue
			}
			if keepTokens {
				c.tokens = append(c.tokens, tokenOut{id: ev.Token, logprob: ev.Logprob, top: ev.Top})
			}
		}
	}
	if ended < len(streams) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, context.Canceled
	}
	return out, nil
}

// usageJSON is the OpenAI usage object.
type usageJSON struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func (u *usageJSON) add(x decode.Usage) {
	u.PromptTokens += x.PromptTokens
	u.CompletionTokens += x.CompletionTokens
	u.TotalTokens += x.PromptTokens + x.CompletionTokens
}

// finite keeps a log-probability encodable in JSON.
func finite(lp float32) float32 {
	if math.IsInf(float64(lp), -1) || math.IsNaN(float64(lp)) || lp < -9999 {
		return -9999
	}
	return lp
}

// strptr returns a pointer to s.
func strptr(s string) *string { return &s }
