package httpapi

import (
	"context"
	"math"
	"net/http"
	"strings"
	"time"

	"llmserve/decode"
)

// tokenOut is one generated token with its log-probabilities.
type tokenOut struct {
	id      int32
	logprob float32
	top     []decode.TokenLogprob
}

// choice is the whole output of one prompt.
type choice struct {
	text   strings.Builder
	tokens []tokenOut // only kept when logprobs were asked for
	final  decode.Event
}

// generation is a submitted request on its way to the client.
type generation struct {
	ctx          context.Context // ends the request's scheduler work
	model        *Model
	streams      []*decode.Stream // one per prompt, in prompt order
	sampling     decode.SamplerParams
	includeUsage bool // stream_options.include_usage
}

// indexed is an event of the prompt with the given index.
type indexed struct {
	index int
	ev    decode.Event
}

// submit queues one scheduler request per prompt. The returned context
// ends the request (client gone, timeout, or the returned cancel).
func (s *Server) submit(w http.ResponseWriter, r *http.Request, m *Model, base decode.Request, prompts [][]int32) ([]*decode.Stream, context.Context, context.CancelFunc, error) {
	var (
		ctx    context.Context
		cancel context.CancelFunc
	)
	if s.cfg.Timeout > 0 {
		ctx, cancel = context.WithTimeout(r.Context(), s.cfg.Timeout)
	} else {
		ctx, cancel = context.WithCancel(r.Context())
	}
	streams := make([]*decode.Stream, len(prompts))
	st := statsOf(w)
	if base.Sampling.PenaltyLastN < 0 {
		// repeat_last_n -1 looks back over the whole context, as in llama.cpp.
		base.Sampling.PenaltyLastN = m.Scheduler.ContextSize()
	}
	for i, p := range prompts {
		req := base
		req.Prompt = p
		if len(prompts) > 1 {
			// Each prompt of a batch draws from its own random stream.
			req.Sampling.Seed += uint64(i)
		}
		var err error
		if streams[i], err = m.Scheduler.Submit(ctx, req); err != nil {
			cancel()
			return nil, nil, nil, err
		}
		if st != nil {
			st.promptTokens += len(p)
		}
	}
	return streams, ctx, cancel, nil
}

// events merges the events of every stream in arrival order; the channel
// closes when every stream has ended or ctx ends.
func events(ctx context.Context, streams []*decode.Stream) <-chan indexed {
	out := make(chan indexed)
	done := make(chan struct{})
	for i, st := range streams {
		go func() {
			defer func() { done <- struct{}{} }()
			for {
				ev, err := st.Next(ctx)
				if err != nil {
					return
				}
				select {
				case out <- indexed{i, ev}:
				case <-ctx.Done():
					return
				}
				if ev.Done {
					return
				}
			}
		}()
	}
	go func() {
		for range streams {
			<-done
		}
		close(out)
	}()
	return out
}

// record notes a token event in the request's stats.
func record(w http.ResponseWriter, ev decode.Event) {
	st := statsOf(w)
	if st == nil {
		return
	}
	if ev.Done {
		st.completionTokens += ev.Usage.CompletionTokens
		return
	}
	now := time.Now()
	if st.firstToken.IsZero() {
		st.firstToken = now
	}
	st.lastToken = now
}

// collect waits for every prompt's output.
func collect(ctx context.Context, w http.ResponseWriter, streams []*decode.Stream, keepTokens bool) ([]*choice, error) {
	out := make([]*choice, len(streams))
	for i := range out {
		out[i] = &choice{}
	}
	ended := 0
	for ie := range events(ctx, streams) {
		c, ev := out[ie.index], ie.ev
		record(w, ev)
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
