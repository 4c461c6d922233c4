package httpapi

import (
	"encoding/json"
	"net/http"
	"time"
)

// completionRequest is the body of POST /v1/completions.
type completionRequest struct {
	genParams
	Prompt json.RawMessage `json:"prompt"`
	Echo   bool            `json:"echo"`
	Suffix *string         `json:"suffix"`
	BestOf *int            `json:"best_of"`
}

// unsupportedCompletion refuses the completion fields this server cannot honour yet.
func (c *completionRequest) unsupportedCompletion() error {
	switch {
	case c.Echo:
		return notYet("echo", "the prompt is not echoed")
	case c.Suffix != nil && *c.Suffix != "":
		return notYet("suffix", "insertion after a suffix is not served")
	case c.BestOf != nil && *c.BestOf > 1:
		return notYet("best_of", "use n for several choices")
	case hasEntries(c.Tools) && !isString(c.ToolChoice, "none"):
		return invalid("tools", "tools are served on /v1/chat/completions, not on /v1/completions")
	}
	return nil
}

type completionResponse struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   *usageJSON         `json:"usage,omitempty"`
}

type completionChoice struct {
	Text         string              `json:"text"`
	Index        int                 `json:"index"`
	Logprobs     *completionLogprobs `json:"logprobs"`
	FinishReason *string             `json:"finish_reason"`
}

// completionLogprobs is the legacy completions logprobs object.
type completionLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []float32            `json:"token_logprobs"`
	TopLogprobs   []map[string]float32 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request) {
	var body completionRequest
	m, err := s.parseGen(r, &body)
	if err != nil {
		writeError(w, err)
		return
	}
	if err := body.unsupportedCompletion(); err != nil {
		writeError(w, err)
		return
	}
	lim := limitsOf(m, false)
	base, err := body.request(lim)
	if err != nil {
		writeError(w, err)
		return
	}
	cons, err := body.constraintOf()
	if err != nil {
		writeError(w, err)
		return
	}
	eng, err := s.constrain(m, cons, base)
	if err != nil {
		writeError(w, err)
		return
	}
	prompts, err := parsePrompts(body.Prompt, m.Tokenizer, lim, body.choices())
	if err != nil {
		writeError(w, err)
		return
	}
	g, cancel, err := s.submit(w, r, m, base, prompts, body.choices(), body.includeUsage(), eng)
	if err != nil {
		writeError(w, err)
		return
	}
	defer cancel()
	resp := completionResponse{
		ID:      "cmpl-" + requestID(w),
		Object:  "text_completion",
		Created: time.Now().Unix(),
		Model:   m.Name,
	}
	if body.Stream {
		streamCompletion(w, g, resp)
	} else {
		writeCompletion(w, g, resp)
	}
}

// writeCompletion waits for every prompt and sends one JSON response.
func writeCompletion(w http.ResponseWriter, g generation, resp completionResponse) {
	choices, err := collect(g.ctx, w, g.streams, g.sampling.Logprobs)
	if err != nil {
		writeError(w, err)
		return
	}
	var u usageJSON
	for i, c := range choices {
		ch := completionChoice{Text: c.text.String(), Index: i, FinishReason: strptr(c.final.FinishReason)}
		if g.sampling.Logprobs {
			ch.Logprobs = completionLogprobsOf(g.model.Tokenizer, c.tokens, 0, g.sampling.TopLogprobs > 0)
		}
		resp.Choices = append(resp.Choices, ch)
		g.addUsage(&u, i, c.final.Usage)
	}
	resp.Usage = &u
	writeJSON(w, http.StatusOK, resp)
}

// streamCompletion sends the output as server-sent chunks. Each batch of
// events the scheduler queued leaves with one write.
func streamCompletion(w http.ResponseWriter, g generation, resp completionResponse) {
	out := startSSE(w)
	st := statsOf(w)
	chunk := &textChunk{head: chunkHead(resp.ID, resp.Object, resp.Created, resp.Model)}
	var u usageJSON
	offsets := make([]int, len(g.streams)) // [choices] text offset of each choice's next token
	f := newFeed(g.ctx, g.streams)
	for batch := f.next(); batch != nil; batch = f.next() {
		record(st, batch)
		for _, ie := range batch {
			ev := ie.ev
			switch {
			case ev.Done && ev.Err != nil:
				out.sendError(ev.Err)
				out.done()
				return
			case ev.Done:
				g.addUsage(&u, ie.index, ev.Usage)
				chunk.text, chunk.index, chunk.finish = ev.Text, ie.index, strptr(ev.FinishReason)
				out.send(chunk)
			case g.sampling.Logprobs:
				lp := completionLogprobsOf(g.model.Tokenizer, []tokenOut{{ev.Token, ev.Logprob, ev.Top}}, offsets[ie.index], g.sampling.TopLogprobs > 0)
				offsets[ie.index] += len(lp.Tokens[0])
				resp.Choices = []completionChoice{{Text: ev.Text, Index: ie.index, Logprobs: lp}}
				out.send(resp)
			case ev.Text != "":
				chunk.text, chunk.index, chunk.finish = ev.Text, ie.index, nil
				out.send(chunk)
			}
		}
		out.flush()
	}
	out.finish(g, func() any {
		resp.Choices = []completionChoice{}
		resp.Usage = &u
		return resp
	})
}

// completionLogprobsOf builds the legacy logprobs object of some tokens
// whose text starts at offset in the choice's text. Each token is shown as
// what it adds to the text (nothing for a control token such as EOS), so
// the tokens joined are the text and text_offset counts its bytes.
func completionLogprobsOf(tok Tokenizer, tokens []tokenOut, offset int, withTop bool) *completionLogprobs {
	lp := &completionLogprobs{
		Tokens:        make([]string, len(tokens)),
		TokenLogprobs: make([]float32, len(tokens)),
		TextOffset:    make([]int, len(tokens)),
	}
	if withTop {
		lp.TopLogprobs = make([]map[string]float32, len(tokens))
	}
	for i, t := range tokens {
		text := string(outputBytes(tok, t.id))
		lp.Tokens[i] = text
		lp.TokenLogprobs[i] = finite(t.logprob)
		lp.TextOffset[i] = offset
		offset += len(text)
		if withTop {
			top := make(map[string]float32, len(t.top))
			for _, alt := range t.top {
				top[string(tok.TokenBytes(alt.ID))] = finite(alt.Logprob)
			}
			lp.TopLogprobs[i] = top
		}
	}
	return lp
}

// controlTokens is a tokenizer that tells control tokens (BOS, EOS,
// <|eot_id|>...) from text: they add nothing to decoded output.
type controlTokens interface{ IsControl(id int32) bool }

// outputBytes is what a generated token adds to the output text.
func outputBytes(tok Tokenizer, id int32) []byte {
	if c, ok := tok.(controlTokens); ok && c.IsControl(id) {
		return nil
	}
	return tok.TokenBytes(id)
}
