package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"llmserve/model/chat"
)

// chatRequest is the body of POST /v1/chat/completions.
type chatRequest struct {
	genParams
	Messages []chatMessageIn `json:"messages"`
}

type chatResponse struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   *usageJSON   `json:"usage,omitempty"`
}

type chatChoice struct {
	Index        int           `json:"index"`
	Message      *chatMessage  `json:"message,omitempty"`
	Delta        *chatMessage  `json:"delta,omitempty"`
	Logprobs     *chatLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
}

type chatMessage struct {
	Role      string         `json:"role,omitempty"`
	Content   *string        `json:"content,omitempty"`
	ToolCalls []toolCallJSON `json:"tool_calls,omitempty"`
}

// toolCallJSON is one call of a message, or a piece of one in a stream
// delta: the first piece of a call has its index, id, type and name, the
// next ones the index and more of the arguments.
type toolCallJSON struct {
	Index    *int             `json:"index,omitempty"`
	ID       string           `json:"id,omitempty"`
	Type     string           `json:"type,omitempty"`
	Function toolFunctionJSON `json:"function"`
}

type toolFunctionJSON struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"` // a JSON object as a string
}

type chatLogprobs struct {
	Content []chatTokenLogprob `json:"content"`
}

// chatTokenLogprob is one generated token; top_logprobs is always sent
// ([] when no alternatives were asked for), as OpenAI does.
type chatTokenLogprob struct {
	Token       string           `json:"token"`
	Logprob     float32          `json:"logprob"`
	Bytes       []int            `json:"bytes"`
	TopLogprobs []chatTopLogprob `json:"top_logprobs"`
}

// chatTopLogprob is one alternative to a generated token.
type chatTopLogprob struct {
	Token   string  `json:"token"`
	Logprob float32 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	var body chatRequest
	m, err := s.parseGen(r, &body)
	if err != nil {
		writeError(w, err)
		return
	}
	lim := limitsOf(m, true)
	base, err := body.request(lim)
	if err != nil {
		writeError(w, err)
		return
	}
	ts, eng, err := s.chatConstraint(m, &body.genParams, base)
	if err != nil {
		writeError(w, err)
		return
	}
	prompt, err := chatPrompt(r.Context(), m, body.Messages, lim, ts)
	if err != nil {
		writeError(w, err)
		return
	}
	g, cancel, err := s.submit(w, r, m, base, [][]int32{prompt}, body.choices(), body.includeUsage(), eng)
	if err != nil {
		writeError(w, err)
		return
	}
	defer cancel()
	resp := chatResponse{
		ID:      "chatcmpl-" + requestID(w),
		Object:  "chat.completion",
		Created: time.Now().Unix(),
		Model:   m.Name,
	}
	switch {
	case body.Stream && ts != nil:
		resp.Object = "chat.completion.chunk"
		streamChatTools(w, g, resp, ts)
	case body.Stream:
		resp.Object = "chat.completion.chunk"
		streamChat(w, g, resp)
	default:
		writeChat(w, g, resp, ts)
	}
}

// writeChat waits for every choice and sends one JSON response; with ts
// each choice's calls are read out of its text.
func writeChat(w http.ResponseWriter, g generation, resp chatResponse, ts *toolSet) {
	choices, err := collect(g.ctx, w, g.streams, g.sampling.Logprobs)
	if err != nil {
		writeError(w, err)
		return
	}
	var u usageJSON
	resp.Choices = make([]chatChoice, len(choices))
	for i, c := range choices {
		ch := chatChoice{Index: i, Message: &chatMessage{Role: "assistant", Content: strptr(c.text.String())},
			FinishReason: strptr(c.final.FinishReason)}
		if ts != nil {
			content, calls, finish := ts.answer(c.text.String(), c.final.FinishReason)
			ch.Message.Content, ch.Message.ToolCalls, ch.FinishReason = content, calls, strptr(finish)
		}
		if g.sampling.Logprobs {
			ch.Logprobs = chatLogprobsOf(g.model.Tokenizer, c.tokens)
		}
		resp.Choices[i] = ch
		g.addUsage(&u, i, c.final.Usage)
	}
	resp.Usage = &u
	writeJSON(w, http.StatusOK, resp)
}

// streamChat sends the answer as server-sent chunks: first the assistant
// role of each choice, then content deltas, then each finish reason. Each
// batch of events the scheduler queued leaves with one write.
func streamChat(w http.ResponseWriter, g generation, resp chatResponse) {
	out := startSSE(w)
	st := statsOf(w)
	for i := range g.streams {
		resp.Choices = []chatChoice{{Index: i, Delta: &chatMessage{Role: "assistant", Content: strptr("")}}}
		out.send(resp)
	}
	out.flush()
	chunk := &deltaChunk{head: chunkHead(resp.ID, resp.Object, resp.Created, resp.Model)}
	var u usageJSON
	f := newFeed(g.ctx, g.streams)
	for batch := f.next(); batch != nil; batch = f.next() {
		record(st, batch)
		for _, ie := range batch {
			ev := ie.ev
			chunk.content, chunk.index, chunk.finish = ev.Text, ie.index, nil
			switch {
			case ev.Done && ev.Err != nil:
				out.sendError(ev.Err)
				out.done()
				return
			case ev.Done:
				g.addUsage(&u, ie.index, ev.Usage)
				chunk.finish = strptr(ev.FinishReason)
				out.send(chunk)
			case g.sampling.Logprobs:
				delta := &chatMessage{}
				if ev.Text != "" {
					delta.Content = strptr(ev.Text)
				}
				resp.Choices = []chatChoice{{Index: ie.index, Delta: delta,
					Logprobs: chatLogprobsOf(g.model.Tokenizer, []tokenOut{{ev.Token, ev.Logprob, ev.Top}})}}
				out.send(resp)
			case ev.Text != "":
				out.send(chunk)
			}
		}
		out.flush()
	}
	out.finish(g, func() any {
		resp.Choices = []chatChoice{}
		resp.Usage = &u
		return resp
	})
}

// chatPrompt checks the messages, renders them with the model's template
// and tokenizes them. Messages too long for the context by their length
// alone are refused before rendering, and the rendered text before
// tokenizing. BOS is added only when the template did not write it.
func chatPrompt(ctx context.Context, m *Model, in []chatMessageIn, lim limits, ts *toolSet) ([]int32, error) {
	msgs, err := chatMessages(in)
	if err != nil {
		return nil, err
	}
	tok := m.Tokenizer
	if err := fitsByLength("messages", contentBytes(msgs), tok, lim); err != nil {
		return nil, err
	}
	var tools json.RawMessage
	if ts != nil {
		tools = ts.raw
	}
	text, err := renderChat(ctx, m, msgs, tools)
	if err != nil {
		return nil, err
	}
	if err := fitsByLength("messages", len(text), tok, lim); err != nil {
		return nil, err
	}
	bos := tok.TokenText(tok.BOS())
	return encodeFitting("messages", text, bos == "" || !strings.HasPrefix(text, bos), tok, lim)
}

// renderChat is the one place that runs the model's chat template: the
// messages, then the assistant's turn opened.
func renderChat(ctx context.Context, m *Model, msgs []chat.Message, tools json.RawMessage) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	tok := m.Tokenizer
	text, err := m.Chat.Render(ctx, msgs, chat.Options{AddGenerationPrompt: true, BOSToken: tok.TokenText(tok.BOS()), EOSToken: tok.TokenText(tok.EOS()), Tools: tools})
	if err != nil {
		return "", fmt.Errorf("chat template: %w", err) // toAPIError maps *chat.RenderError
	}
	return text, nil
}

// chatLogprobsOf builds the chat logprobs object of some tokens.
func chatLogprobsOf(tok Tokenizer, tokens []tokenOut) *chatLogprobs {
	lp := &chatLogprobs{Content: make([]chatTokenLogprob, len(tokens))}
	entry := func(id int32, logprob float32) (string, []int, float32) {
		b := tok.TokenBytes(id)
		return string(b), byteValues(b), finite(logprob)
	}
	for i, t := range tokens {
		token, bytes, logprob := entry(t.id, t.logprob)
		e := chatTokenLogprob{Token: token, Logprob: logprob, Bytes: bytes, TopLogprobs: make([]chatTopLogprob, len(t.top))}
		for j, alt := range t.top {
			token, bytes, logprob := entry(alt.ID, alt.Logprob)
			e.TopLogprobs[j] = chatTopLogprob{Token: token, Logprob: logprob, Bytes: bytes}
		}
		lp.Content[i] = e
	}
	return lp
}

// byteValues lists the bytes of b as numbers, as OpenAI's "bytes" fields
// and llama.cpp's pieces that are not valid UTF-8.
func byteValues(b []byte) []int {
	ints := make([]int, len(b))
	for i, c := range b {
		ints[i] = int(c)
	}
	return ints
}
